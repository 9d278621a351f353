"""What the benchmark tables say about the machine they were measured on:
vector units and gathers differ between the machines these tables come
from, so each table names its CPU."""

import pathlib
import statistics
import subprocess
import sys


def cpu_model():
    """The CPU's model name, from /proc/cpuinfo."""
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"

# OpenBLAS's kernel families for x86-64, each with the CPU flags it needs.
# Debian's OpenBLAS 0.3.21 picks its kernels by CPU model, and takes a CPU
# it does not know (AMD Zen 5) for an AVX2 one: there its sgemm runs at
# half the speed of its AVX-512 kernels. The strongest baseline is the
# fastest kernel family the CPU runs.
_OPENBLAS_CORES = [("Haswell", {"avx2", "fma"}),
                   ("SkylakeX", {"avx512f", "avx512bw", "avx512vl"}),
                   ("Cooperlake", {"avx512f", "avx512bw", "avx512vl",
                                   "avx512_bf16"})]

_PROBE = r"""
import statistics, time, torch
torch.set_num_threads(1)
a, b = torch.randn(512, 1024), torch.randn(4096, 1024)
a @ b.T
times = []
for _ in range(5):
    start = time.perf_counter()
    a @ b.T
    times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def _cpu_flags():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# The glibc malloc settings Lamina's runtime gives its own process
# (Program.cpp, keepFreedMemory): freed memory is kept for reuse, so
# that a step does not pay a page fault per 4 KiB of the buffers it
# allocates again. Eager PyTorch gets them too: without them its GPT-2 MLP
# training step faults in up to 32 MiB a step, 1.3-2x slower on a VM.
MALLOC_SETTINGS = {"MALLOC_MMAP_THRESHOLD_": str(256 << 20),
                   "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}


def openblas_env(environ, rounds=3):
    """`environ` with Debian's pthread OpenBLAS on the library path, on one
    thread, Lamina's malloc settings (MALLOC_SETTINGS), and
    OPENBLAS_CORETYPE set to the kernel family that runs PyTorch's fp32
    matmul fastest here (medians over `rounds` alternating runs, each
    pinned to one core)."""
    env = dict(environ, LD_LIBRARY_PATH=OPENBLAS_DIR, OPENBLAS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", **MALLOC_SETTINGS)
    env.pop("OPENBLAS_CORETYPE", None)
    flags = _cpu_flags()
    # Named even where OpenBLAS would pick the same kernels itself: its
    # choice differs between processes (an AVX2 kernel for a C program on
    # Zen 5, AVX-512 ones inside PyTorch).
    cores = [name for name, needs in _OPENBLAS_CORES if needs <= flags]
    if not cores:
        return env
    times = {core: [] for core in cores}
    for _ in range(rounds):
        for core in cores:
            probe_env = dict(env, OPENBLAS_CORETYPE=core)
            out = subprocess.run(
                ["taskset", "-c", "0", sys.executable, "-c", _PROBE],
                env=probe_env, check=True, capture_output=True, text=True)
            times[core].append(float(out.stdout.split()[-1]))
    env["OPENBLAS_CORETYPE"] = min(
        cores, key=lambda core: statistics.median(times[core]))
    return env


def openblas_kernels(env):
    """How a table names the OpenBLAS kernels `env` selects, and its malloc
    settings."""
    core = env.get("OPENBLAS_CORETYPE")
    kernels = (f"OpenBLAS's {core} kernels (OPENBLAS_CORETYPE={core}, the "
               "fastest it has for this CPU)" if core else
               "OpenBLAS's own choice of kernels")
    settings = " ".join(f"{k}={v}" for k, v in MALLOC_SETTINGS.items())
    return (f"{kernels}, with the malloc settings Lamina's runtime gives "
            f"its own process ({settings})")
