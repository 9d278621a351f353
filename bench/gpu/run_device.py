"""Runs the GPU checks and the benchmark on the machine with the GPU.

    python3 bench/gpu/run_device.py --artefacts build/gpu-device --out $OUT

Needs PyTorch with CUDA and the directory prepare.py wrote; no LLVM, MLIR
or Lamina build. Appends results to $OUT/gpu_checks.md and $OUT/gpu_bench.md
as it goes (a run cut short keeps what it measured), and exits non-zero if
a check failed.

Checks: every artefact's outputs against the CPU pipeline's (.npy):
  float  max |gpu − cpu| ≤ tol·max|cpu| (bf16 and f16 outputs 1e-2, f32
         1e-3; a backward check's gradients against the f32 CPU backward);
  dropout  also the same dropped elements, exactly;
  codes  LNS codes identical (the mismatch count is reported).
Benchmark: fused linear + bias + GELU(tanh), bf16, against PyTorch on the
device (F.linear → cuBLAS, then F.gelu), timed with CUDA events, median of
rounds; results checked within 1e-2·max|ref|.
"""

import argparse
import importlib.util
import json
import pathlib
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import cases  # noqa: E402


def load_aot():
    """python/lamina/runtime/aot.py by path: the rest of Lamina is not here."""
    path = HERE.parents[1] / "python" / "lamina" / "runtime" / "aot.py"
    spec = importlib.util.spec_from_file_location("lamina_aot", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


aot = load_aot()

TORCH_DTYPES = {cases.BF16: torch.bfloat16, cases.F16: torch.float16,
                cases.F32: torch.float32, "i64": torch.int64}


def bf16_tensor(bits):
    """bf16 saved as uint16 bits (PyTorch may not take uint16 arrays)."""
    return torch.from_numpy(
        np.ascontiguousarray(bits).view(np.int16)).view(torch.bfloat16)


def load_arguments(check, artefacts, place=lambda tensor: tensor.cuda()):
    """The inputs of `check` as saved by prepare.py (scalars as ints,
    tensors moved by `place`), and its outputs, zero-filled."""
    inputs = []
    for spec in check["inputs"]:
        if "scalar" in spec:
            inputs.append(int(spec["scalar"]))
            continue
        array = np.load(artefacts / spec["file"])
        inputs.append(place(bf16_tensor(array) if spec["dtype"] == cases.BF16
                            else torch.from_numpy(np.ascontiguousarray(array))))
    outputs = [place(torch.zeros(r["shape"], dtype=TORCH_DTYPES[
                   r.get("output_dtype", r["dtype"])]))
               for r in check["results"]]
    return inputs, outputs


def expected_array(path, kind):
    array = np.load(path)
    if kind == cases.BF16:
        return bf16_tensor(array).float().numpy()
    return array


def append(path, text):
    with open(path, "a") as f:
        f.write(text + "\n")
    print(text, flush=True)


def run_check(check, artefacts, report):
    art = aot.Artefact(artefacts / check["artefact"])
    args, outputs = load_arguments(check, artefacts)
    art.call(check.get("function", "main"), *args, *outputs)
    torch.cuda.synchronize()
    ok, notes = True, []
    for result, output in zip(check["results"], outputs):
        expected = expected_array(artefacts / result["file"], result["dtype"])
        if check["compare"] == "codes":
            got = output.cpu().numpy()
            mismatches = int((got != expected).sum())
            notes.append(f"{mismatches} of {got.size} codes differ")
            ok &= mismatches == 0
            continue
        got = output.float().cpu().numpy().reshape(expected.shape)
        scale = float(np.abs(expected).max()) or 1.0
        output_dtype = result.get("output_dtype", result["dtype"])
        tolerance = 1e-2 if output_dtype in (cases.BF16, cases.F16) else 1e-3
        error = float(np.abs(got - expected).max()) / scale
        notes.append(f"max error {error:.2e}·max|ref| (tolerance {tolerance})")
        ok &= error <= tolerance
        if check["compare"] == "dropout":
            differ = int(((got == 0) != (expected == 0)).sum())
            notes.append(f"{differ} dropout decisions differ "
                         f"({int((expected == 0).sum())} dropped)")
            ok &= differ == 0
    append(report, f"| {check['name']} | {check['chip']} | "
                   f"{'pass' if ok else 'FAIL'} | {'; '.join(notes)} |")
    return ok


def time_cuda(fn, rounds, repeat):
    """Median over `rounds` of the mean time of `repeat` calls, in s."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / repeat)
    return statistics.median(times)


def run_bench(entry, artefacts, report, rounds, repeat):
    m, k, n = entry["shape"]
    art = aot.Artefact(artefacts / entry["artefact"])
    gen = torch.Generator(device="cuda").manual_seed(m + k + n)
    x = torch.randn(m, k, device="cuda", generator=gen).bfloat16()
    w = (torch.randn(n, k, device="cuda", generator=gen) / k ** 0.5).bfloat16()
    b = torch.randn(n, device="cuda", generator=gen).bfloat16()
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

    def lamina():
        art.call("main", x, w, b, out)

    def cublas():
        return F.gelu(F.linear(x, w, b), approximate="tanh")

    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # stream-ordered calls, no host syncs
        lamina()
        reference = cublas()
        torch.cuda.synchronize()
        error = float((out.float() - reference.float()).abs().max() /
                      reference.float().abs().max())
        t_lamina = time_cuda(lamina, rounds, repeat)
        t_cublas = time_cuda(cublas, rounds, repeat)
    flops = 2.0 * m * n * k
    tf_lamina, tf_cublas = flops / t_lamina / 1e12, flops / t_cublas / 1e12
    bytes_moved = 2.0 * (m * k + n * k + n + m * n)
    line = (f"| {m}×{k}×{n} | {t_lamina * 1e3:.3f} | {tf_lamina:.0f} "
            f"({100 * tf_lamina / cases.H200_BF16_DENSE_TFLOPS:.0f}%) | "
            f"{t_cublas * 1e3:.3f} | {tf_cublas:.0f} | "
            f"{t_cublas / t_lamina:.2f} | {error:.1e} |")
    if m <= 64:
        gbps = bytes_moved / t_lamina / 1e9
        line += (f" {gbps:.0f} GB/s = "
                 f"{100 * gbps / cases.H200_HBM_GBPS:.0f}% of HBM |")
    else:
        line += " |"
    append(report, line)
    return error <= 1e-2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artefacts", default="build/gpu-device")
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    artefacts = pathlib.Path(args.artefacts)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((artefacts / "manifest.json").read_text())
    if not torch.cuda.is_available():
        sys.exit("no CUDA device visible to PyTorch")
    device = torch.cuda.get_device_name()

    checks = out / "gpu_checks.md"
    append(checks, f"# GPU checks on {device} ({time.strftime('%F %T')})\n\n"
                   "| check | chip | result | details |\n|---|---|---|---|")
    all_ok = True
    for check in manifest["checks"]:
        try:
            all_ok &= run_check(check, artefacts, checks)
        except Exception as error:  # report and go on with the others
            append(checks, f"| {check['name']} | {check['chip']} | FAIL | "
                           f"{type(error).__name__}: {error} |")
            all_ok = False

    bench = out / "gpu_bench.md"
    append(bench, f"# Fused linear + bias + GELU, bf16, on {device}\n\n"
                  f"Baseline: PyTorch {torch.__version__} F.linear (cuBLAS) + "
                  "F.gelu(tanh) on the same stream; CUDA events, median of "
                  f"{args.rounds} rounds of {args.repeat} calls.\n\n"
                  "| M×K×N | Lamina ms | Lamina TFLOP/s (% of 989) | "
                  "cuBLAS ms | cuBLAS TFLOP/s | Lamina / cuBLAS | max err | "
                  "bandwidth |\n|---|---|---|---|---|---|---|---|")
    for entry in manifest["bench"]:
        try:
            all_ok &= run_bench(entry, artefacts, bench, args.rounds,
                                args.repeat)
        except Exception as error:
            append(bench, f"| {entry['shape']} | FAIL: "
                          f"{type(error).__name__}: {error} |")
            all_ok = False
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
