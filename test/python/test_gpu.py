"""Ahead-of-time GPU artefacts: built everywhere a CUDA toolkit is installed,
run and checked against the CPU pipeline wherever a GPU is visible too
(the same checks bench/gpu/run_device.py runs on a lent GPU machine)."""

import ctypes
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch

from lamina import aot, tools

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "gpu"))
import cases  # noqa: E402
import prepare  # noqa: E402


def cuda_toolkit():
    for variable in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            return pathlib.Path(os.environ[variable])
    return pathlib.Path("/usr/local/cuda")


needs_toolkit = pytest.mark.skipif(
    not (cuda_toolkit() / "bin" / "ptxas").exists(),
    reason="lamina-compile assembles kernels with the CUDA toolkit's ptxas")

IR = cases.CHECKS[0]["ir"]


def compile_artefact(directory, ir=IR):
    """prepare.py's lamina-compile of `ir`: directory/libmodel.so, with its
    PTX beside it (libmodel.ptx)."""
    library = directory / "libmodel.so"
    prepare.compile_artefact(ir, "sm_90a", library)
    return library


@needs_toolkit
def test_artefact_exports_entry_points_and_needs_only_libc(tmp_path):
    library = compile_artefact(tmp_path)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)],
                             capture_output=True, text=True,
                             check=True).stdout
    for name in ("main", "_mlir_ciface_main", "_mlir_main", "laminaCudaInit",
                 "mgpuLaunchKernel", "mgpuTensorMapEncodeTiledMemref"):
        assert f" T {name}\n" in symbols
    needed = subprocess.run(["readelf", "-d", str(library)],
                            capture_output=True, text=True,
                            check=True).stdout
    libraries = {line.split("[")[1].split("]")[0]
                 for line in needed.splitlines() if "(NEEDED)" in line}
    # libcuda is opened at run time; libstdc++ is linked in.
    assert libraries <= {"libc.so.6", "libm.so.6", "libdl.so.2",
                         "libgcc_s.so.1", "ld-linux-x86-64.so.2"}, libraries
    assert "wgmma.mma_async" in (tmp_path / "libmodel.ptx").read_text()


@needs_toolkit
def test_artefact_reports_a_missing_gpu_without_crashing(tmp_path):
    library = compile_artefact(tmp_path)
    # Loading runs the kernel-module constructor; it must not exit.
    art = aot.Artefact(library)
    reason = art.gpu_unavailable()
    if torch.cuda.is_available():
        assert reason is None
    else:
        assert reason  # e.g. no libcuda.so.1, or no device


def test_lamina_compile_reports_a_missing_toolkit(tmp_path):
    source = tmp_path / "model.mlir"
    source.write_text(IR)
    completed = subprocess.run(
        [tools.tool("lamina-compile"), str(source), "-o",
         str(tmp_path / "lib.so"), f"--cuda-path={tmp_path / 'none'}"],
        capture_output=True, text=True)
    assert completed.returncode != 0
    assert f"no CUDA toolkit at '{tmp_path / 'none'}'" in completed.stderr
    assert len(completed.stderr) < 1000  # the message, not the IR


def test_lamina_compile_reports_bad_input_with_its_location(tmp_path):
    source = tmp_path / "model.mlir"
    source.write_text(IR.replace("bf16", "f32"))
    completed = subprocess.run(
        [tools.tool("lamina-compile"), str(source), "-o",
         str(tmp_path / "lib.so")], capture_output=True, text=True)
    assert completed.returncode != 0
    assert "model.mlir:3:8: error: 'lamina.fused_linear' op tensor-core " \
           "kernels take bf16 or f16 inputs" in completed.stderr


def gpu_ready():
    if not torch.cuda.is_available():
        return "no CUDA device visible to PyTorch"
    if not (cuda_toolkit() / "bin" / "ptxas").exists():
        return "no CUDA toolkit to build artefacts"
    return None


@pytest.mark.skipif(gpu_ready() is not None, reason=str(gpu_ready()))
@pytest.mark.parametrize(
    "name", [c["name"] for c in cases.CHECKS + cases.BACKWARD_CHECKS])
def test_gpu_matches_cpu_pipeline(name, tmp_path_factory):
    import run_device

    out = tmp_path_factory.getbasetemp() / "gpu-artefacts"
    if not (out / "manifest.json").exists():
        prepare.prepare(out, bench=False)
    manifest = json.loads((out / "manifest.json").read_text())
    check = next(c for c in manifest["checks"] if c["name"] == name)
    assert run_device.run_check(check, out, out / "report.md")


def test_aot_descriptors_match_the_memref_abi():
    tensor = torch.zeros(3, 4, 5)
    descriptor = aot._Descriptor.of(tensor)
    assert descriptor.aligned == tensor.data_ptr()
    assert list(descriptor.sizes) == [3, 4, 5]
    assert list(descriptor.strides) == [20, 5, 1]
    # {allocated, aligned, offset, sizes[3], strides[3]}: 9 words.
    assert ctypes.sizeof(descriptor) == 9 * 8
    with pytest.raises(ValueError, match="contiguous"):
        aot._Descriptor.of(tensor.transpose(0, 1))


class _Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 256)
        self.act = torch.nn.GELU(approximate="tanh")
        self.fc2 = torch.nn.Linear(256, 64)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def _bf16_mlp():
    torch.manual_seed(0)
    return _Mlp().to(torch.bfloat16).eval()


def test_build_rejects_unknown_targets():
    import lamina

    model = _bf16_mlp()
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        lamina.build(lamina.create_schedule(model), [x], target="tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible")
def test_build_for_cuda_without_a_gpu_says_so():
    import lamina

    model = _bf16_mlp()
    x = torch.randn(32, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="target='cuda' needs a CUDA GPU"):
        lamina.build(lamina.create_schedule(model), [x], target="cuda")


@pytest.mark.skipif(gpu_ready() is not None, reason=str(gpu_ready()))
def test_build_for_cuda_matches_eager_pytorch():
    import lamina

    model = _bf16_mlp()
    x = torch.randn(128, 64, dtype=torch.bfloat16)
    compiled = lamina.build(lamina.create_schedule(model), [x], target="cuda")
    got = compiled(x.cuda())
    assert got.is_cuda and got.dtype == torch.bfloat16
    expected = model.cuda()(x.cuda())
    scale = expected.float().abs().max()
    assert (got.float() - expected.float()).abs().max() <= 1e-2 * scale


@needs_toolkit
def test_imported_bf16_model_compiles_for_the_gpu(tmp_path):
    """What build(target='cuda') compiles: the imported, scheduled MLP
    (Linear → GELU → Linear) becomes two fused-linear kernels."""
    import lamina
    from lamina.runtime.build import _result_types

    model = _bf16_mlp()
    x = torch.randn(128, 64, dtype=torch.bfloat16)
    sch = lamina.create_schedule(model)
    imported = sch.trace([x])
    ir = sch.scheduled_ir()
    assert _result_types(imported) == [((128, 64), torch.bfloat16)]
    compile_artefact(tmp_path, ir)
    ptx = (tmp_path / "libmodel.ptx").read_text()
    assert ptx.count(".entry") == 2
    # fc1 (N = 256) on 128×256 tiles, fc2 (N = 64) on 128×64 tiles.
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in ptx


def test_result_types_of_lns_and_float_entry_points():
    from lamina.runtime.build import _result_types
    from lamina.importer import ImportedModel, ir

    imported = ImportedModel(
        "", "forward", [], 1, False, 2, (0, 1),
        argument_types=[ir.TensorType((4, 8), ir.LnsNumber(f=10))],
        result_types=[ir.TensorType((4, 16), ir.LnsNumber(f=10)),
                      ir.TensorType((2, 3), ir.BF16)])
    assert _result_types(imported) == [((4, 16), torch.int64),
                                       ((2, 3), torch.bfloat16)]


# Test doubles shared by the scripts run against the stand-in driver, whose
# device memory is host memory.
_FAKE_PRELUDE = r"""
import torch


class OnDevice:
    # A CPU tensor that says it is on the GPU.
    is_cuda = True

    def __init__(self, tensor):
        self.tensor = tensor

    def __getattr__(self, name):
        return getattr(self.tensor, name)


class Stream:
    cuda_stream = 0x77
"""

# ... loading python/lamina/runtime/aot.py (argv[1]) by path, as the device
# does.
_FAKE_AOT = _FAKE_PRELUDE + r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("aot", sys.argv[1])
aot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(aot)
"""

_FAKE_CALL = _FAKE_AOT + r"""
art = aot.Artefact(sys.argv[2])
assert art.gpu_unavailable() is None
x = OnDevice(torch.zeros(2, 8, 512, dtype=torch.float16))
w = OnDevice(torch.zeros(200, 512, dtype=torch.float16))
b = OnDevice(torch.zeros(200))
out = OnDevice(torch.full((2, 8, 200), 7.0))
art.call("main", x, w, b, 1234, out, stream=Stream())
"""


def _build_fake_driver(directory):
    compiler = shutil.which("cc") or shutil.which("clang-22") or "clang-22"
    subprocess.run([compiler, "-shared", "-fPIC", "-o",
                    str(directory / "libcuda.so.1"),
                    str(ROOT / "test" / "Integration" / "Inputs" /
                        "fake-libcuda.c")], check=True)
    return dict(os.environ, LD_LIBRARY_PATH=str(directory),
                LAMINA_FAKE_CUDA_LOG=str(directory / "log"))


def _call_on_fake_driver(directory, ir, script_text):
    """Compiles `ir`, runs `script_text` (argv: aot.py, the artefact) on
    the stand-in driver and returns the driver's log lines."""
    library = compile_artefact(directory, ir)
    env = _build_fake_driver(directory)
    script = directory / "script.py"
    script.write_text(script_text)
    aot = ROOT / "python" / "lamina" / "runtime" / "aot.py"
    subprocess.run([sys.executable, str(script), str(aot), str(library)],
                   env=env, check=True)
    return (directory / "log").read_text().splitlines()


@needs_toolkit
def test_aot_calls_entry_points_with_the_memref_abi(tmp_path):
    """aot.Artefact.call against the stand-in driver: the descriptors it
    builds reach the generated host code, which encodes the TMA maps of
    x[16, 512] (a 3-D tensor's rows) and W[200, 512] and launches on
    PyTorch's stream."""
    check = next(c for c in cases.CHECKS if c["name"] == "dropout_f16_decode")
    lines = _call_on_fake_driver(tmp_path, check["ir"], _FAKE_CALL)
    maps = [line for line in lines if line.startswith("cuTensorMapEncodeTiled")]
    assert "dtype=6 rank=2 dims=[512,16] stride=1024 box=[64,64]" in maps[0]
    assert "dtype=6 rank=2 dims=[512,200] stride=1024 box=[64,64]" in maps[1]
    launch = next(line for line in lines if line.startswith("cuLaunchKernel"))
    # 16 rows: one row block of 64, four column blocks of 64 for N = 200;
    # stream-ordered on the caller's stream.
    assert launch == ("cuLaunchKernel grid=(4,1,1) block=(256,1,1) "
                      "smem=131072 stream=0x77")


_FAKE_BUNDLE = _FAKE_PRELUDE + r"""
import json, pathlib, sys
sys.path.insert(0, sys.argv[1])
import run_device

Stream.cuda_stream = 0  # each call runs to completion
bundle = pathlib.Path(sys.argv[2])
for check in json.loads((bundle / "manifest.json").read_text())["checks"]:
    art = run_device.aot.Artefact(bundle / check["artefact"])
    args, outputs = run_device.load_arguments(check, bundle, OnDevice)
    art.call(check.get("function", "main"), *args, *outputs, stream=Stream())
    print(check["name"])
"""


@needs_toolkit
def test_device_bundle_runs_its_host_code_on_a_stand_in_driver(tmp_path):
    """Every artefact of the device run (bench/gpu) loads its kernels and
    calls through, on the inputs prepare.py saved, with run_device.py's
    loaders: what the GPU machine will do, minus the kernels."""
    bundle = tmp_path / "bundle"
    prepare.prepare(bundle, bench=False)
    env = _build_fake_driver(tmp_path)
    script = tmp_path / "bundle.py"
    script.write_text(_FAKE_BUNDLE)
    ran = subprocess.run([sys.executable, str(script),
                          str(ROOT / "bench" / "gpu"), str(bundle)],
                         env=env, capture_output=True, text=True, check=True)
    assert ran.stdout.split() == [
        c["name"] for c in cases.CHECKS + cases.BACKWARD_CHECKS]
    launches = [line for line in (tmp_path / "log").read_text().splitlines()
                if line.startswith("cuLaunchKernel")]
    # One per forward check, the MLP twice; an MLP's backward 12 times (per
    # layer: db, Wᵀ, dy·W with gelu′ for fc2, dyᵀ, xᵀ, dW; x is fc1's only
    # transposed input), twice; each single layer's 7 (GELU and SiLU: its
    # derivative is a kernel of its own, dy is an argument, not a matmul).
    assert len(launches) == len(cases.CHECKS) + 1 + 2 * 12 + 2 * 7


_DYNAMIC_IR = """
func.func @main(%x: tensor<?x8x256xbf16>, %w: tensor<512x256xbf16>, %b: tensor<512xbf16>) -> tensor<?x8x512xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<?x8x256xbf16>, tensor<512x256xbf16>, tensor<512xbf16>) -> tensor<?x8x512xbf16>
  return %y : tensor<?x8x512xbf16>
}"""

_DYNAMIC_CALLS = _FAKE_AOT + r"""
art = aot.Artefact(sys.argv[2])
w = OnDevice(torch.zeros(512, 256, dtype=torch.bfloat16))
b = OnDevice(torch.zeros(512, dtype=torch.bfloat16))
for batch in (2, 40):
    x = OnDevice(torch.zeros(batch, 8, 256, dtype=torch.bfloat16))
    out = OnDevice(torch.zeros(batch, 8, 512, dtype=torch.bfloat16))
    art.call("main", x, w, b, out, stream=Stream())
"""


@needs_toolkit
def test_one_artefact_serves_any_number_of_rows(tmp_path):
    """Leading dims unknown when compiling: the same artefact encodes the
    TMA map of x with each call's rows and launches ⌈M/128⌉ × 2 tiles."""
    lines = _call_on_fake_driver(tmp_path, _DYNAMIC_IR, _DYNAMIC_CALLS)
    # x's maps (box of 128 rows); W's (256 rows) is encoded once and cached.
    maps = [line for line in lines if "box=[64,128]" in line]
    assert ["dims=[256,16]" in maps[0], "dims=[256,320]" in maps[1]] == \
        [True, True], maps
    assert sum("box=[64,256]" in line for line in lines) == 1
    launches = [line.split(" smem")[0] for line in lines
                if line.startswith("cuLaunchKernel")]
    assert launches == ["cuLaunchKernel grid=(2,1,1) block=(384,1,1)",
                        "cuLaunchKernel grid=(6,1,1) block=(384,1,1)"]


_MLP_CALL = _FAKE_AOT + r"""
art = aot.Artefact(sys.argv[2])
bf16 = torch.bfloat16
args = [OnDevice(torch.zeros(*shape, dtype=bf16)) for shape in
        [(128, 64), (384, 64), (384,), (64, 384), (64,), (128, 64)]]
art.call("main", *args, stream=Stream())
"""


@needs_toolkit
def test_stream_ordered_calls_allocate_temporaries_on_the_stream(tmp_path):
    """On PyTorch's stream, the hidden activations of a two-layer program
    are allocated and freed stream-ordered (no device-wide sync), around
    the two launches."""
    check = next(c for c in cases.CHECKS if c["name"] == "mlp_two_layers")
    lines = _call_on_fake_driver(tmp_path, check["ir"], _MLP_CALL)
    events = [line.split()[0] for line in lines
              if line.startswith(("cuMemAllocAsync", "cuMemFreeAsync",
                                  "cuLaunchKernel"))]
    assert events == ["cuMemAllocAsync", "cuLaunchKernel", "cuLaunchKernel",
                      "cuMemFreeAsync"]
    assert "cuMemAllocAsync bytes=98304 stream=0x77" in lines  # 128×384 bf16
    assert "cuMemFreeAsync stream=0x77" in lines


_FAKE_BINDING = _FAKE_PRELUDE + r"""
import sys
from lamina import _lamina

program = _lamina.Program(_lamina.Module(open(sys.argv[1]).read()), "main",
                          target="cuda")


def resident(tensor, dtype):
    return (tensor.data_ptr(), dtype, tuple(tensor.shape))


x = torch.zeros(2, 8, 512, dtype=torch.float16)
w = torch.zeros(200, 512, dtype=torch.float16)
b = torch.zeros(200)
out = torch.full((2, 8, 200), 7.0)
for args, outputs in (
        ([resident(x, "f32"), resident(w, "f16"), resident(b, "f32"), 1],
         [resident(out, "f32")]),
        ([resident(x, "f16"), resident(w, "f16"), resident(b, "f32")],
         [resident(out, "f32")]),
        ([resident(x, "f16"), resident(w, "f16"), resident(b, "f32"), 1],
         [resident(out, "f32"), resident(out, "f32")])):
    try:
        program.run_resident(args, outputs, stream=0x77)
    except ValueError as error:
        print(error)
program.run_resident(
    [resident(x, "f16"), resident(w, "f16"), resident(b, "f32"), 1234],
    [resident(out, "f32")], stream=0x77)
"""


@needs_toolkit
def test_binding_builds_and_calls_gpu_programs_in_process(tmp_path):
    """target='cuda' through the binding (what lamina.build(target='cuda')
    uses): the artefact is built and loaded in this process, no
    lamina-compile and no ctypes; device buffers given as (pointer, dtype,
    shape) reach the generated host code as memref descriptors (the TMA
    maps of x[16, 512] and W[200, 512]) and the kernel launches on the
    caller's stream. Arguments that do not match the signature are
    refused before anything runs."""
    check = next(c for c in cases.CHECKS if c["name"] == "dropout_f16_decode")
    source = tmp_path / "model.mlir"
    source.write_text(check["ir"])
    env = _build_fake_driver(tmp_path)
    script = tmp_path / "script.py"
    script.write_text(_FAKE_BINDING)
    ran = subprocess.run([sys.executable, str(script), str(source)], env=env,
                         capture_output=True, text=True, check=True)
    assert ran.stdout.splitlines() == [
        "argument 0 must be tensor<2x8x512xf16>, got f32",
        "the program takes 4 arguments, got 3",
        "the program has 1 results, got 2 outputs"]
    lines = (tmp_path / "log").read_text().splitlines()
    maps = [line for line in lines if line.startswith("cuTensorMapEncodeTiled")]
    assert len(maps) == 2
    assert "dtype=6 rank=2 dims=[512,16] stride=1024 box=[64,64]" in maps[0]
    assert "dtype=6 rank=2 dims=[512,200] stride=1024 box=[64,64]" in maps[1]
    launches = [line for line in lines if line.startswith("cuLaunchKernel")]
    assert launches == ["cuLaunchKernel grid=(4,1,1) block=(256,1,1) "
                        "smem=131072 stream=0x77"]


@needs_toolkit
def test_binding_says_why_no_gpu_runs_the_program():
    """Without a usable GPU (no driver, or a driver and no device) the
    artefact still builds, and loading it says why it cannot run
    (RuntimeError, as lamina.build(target='cuda') reports it)."""
    from lamina import _lamina

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    module = _lamina.Module(cases.CHECKS[0]["ir"])
    with pytest.raises(RuntimeError, match="no usable GPU: "):
        _lamina.Program(module, "main", target="cuda")
    with pytest.raises(ValueError, match="targets are 'cpu' and 'cuda'"):
        _lamina.Program(module, "main", target="tpu")
