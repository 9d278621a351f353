"""Builds everything the GPU machine runs, here, where Lamina is.

    /usr/bin/python3 bench/gpu/prepare.py [--out build/gpu-device]

For each check of cases.py: the artefact (lamina-compile: kernels as cubin +
PTX, host code, Lamina's CUDA runtime), seeded inputs and the CPU pipeline's
results as .npy; for each backward check, the differentiated program's
@main_backward, its inputs and the CPU pipeline's f32 gradients. For each benchmark shape: the artefact only (inputs and the
cuBLAS reference are made on the device by PyTorch). The directory stays
far below the 64 MiB that travels to the device; run_device.py runs it.
"""

import argparse
import json
import pathlib
import subprocess
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import cases  # noqa: E402

from lamina import lns_numpy, tools  # noqa: E402


def bf16_bits(values):
    """float32 → bf16 bit patterns (uint16), rounded to nearest even."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return (rounded >> 16).astype(np.uint16)


def make_input(kind, shape, rng):
    if kind == "i64":
        return None
    if kind.startswith("lns"):
        f = int(kind[3:])
        values = rng.standard_normal(shape) * 0.5
        values[rng.random(shape) < 0.05] = 0.0  # zeros take the zero rules
        return lns_numpy.encode(values, f)
    values = rng.standard_normal(shape).astype(np.float32)
    if len(shape) == 2 and shape[0] > 1 and kind != cases.F32:
        values *= 1.0 / np.sqrt(shape[1])  # weights: unit-variance outputs
    if kind == cases.BF16:
        return bf16_bits(values)
    if kind == cases.F16:
        return values.astype(np.float16)
    return values


def to_f32(array, kind):
    """The float32 values of bf16 bits, f16 or f32 arrays."""
    if kind == cases.BF16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def from_f32(values, kind):
    return bf16_bits(values) if kind == cases.BF16 else (
        values.astype(np.float16) if kind == cases.F16 else values)


def differentiate(ir, workdir):
    """`ir` with @main_forward and @main_backward (lamina-generate-backward)."""
    source = workdir / "forward.mlir"
    source.write_text(ir)
    return subprocess.run([tools.tool("lamina-opt"), str(source),
                           "--lamina-generate-backward"], check=True,
                          capture_output=True, text=True).stdout


def prepare_backward_check(number, check, out):
    """Inputs of @main_backward (the arguments, the saved values of the f32
    forward rounded to the check's type, seeded cotangents) and the f32
    backward's gradients on exactly those values."""
    name = check["name"]
    data_of = check.get("same_as", name)
    kind = check["inputs"][0][1]
    work = out / f"{name}.cpu"
    work.mkdir(parents=True, exist_ok=True)
    program = differentiate(check["ir"], work)
    reference = differentiate(
        check["ir"].replace(cases.BF16, cases.F32).replace(cases.F16,
                                                           cases.F32), work)
    files = []

    def saved(label, array):
        path = out / f"{data_of}.{label}.npy"
        if data_of == name:
            np.save(path, array)
        files.append({"file": path.name, "dtype": kind})
        return np.load(path)

    rng = np.random.default_rng(2000 + number)
    arguments = [saved(label, make_input(kind, shape, rng))
                 for label, _, shape in check["inputs"]]
    exact = [to_f32(a, kind) for a in arguments]
    forward = tools.run_ir(reference, exact, work / "forward",
                           entry="main_forward")
    results = forward[:1]  # every backward check has one result
    keep = [saved(f"saved{i}", from_f32(value, kind))
            for i, value in enumerate(forward[len(results):])]
    cotangents = [saved(f"cotangent{i}",
                        from_f32(rng.standard_normal(r.shape)
                                 .astype(np.float32), kind))
                  for i, r in enumerate(results)]
    gradients = tools.run_ir(
        reference, exact + [to_f32(a, kind) for a in keep + cotangents],
        work / "backward", entry="main_backward")
    expected = []
    for i, gradient in enumerate(gradients):
        path = out / f"{name}.expected{i}.npy"
        np.save(path, gradient)
        expected.append({"file": path.name, "dtype": cases.F32,
                         "output_dtype": kind,
                         "shape": list(gradient.shape)})
    artefact = out / f"lib{name}.so"
    compile_artefact(program, check["chip"], artefact)
    return {"name": name, "chip": check["chip"], "artefact": artefact.name,
            "function": "main_backward", "inputs": files, "results": expected,
            "compare": "float"}


def compile_artefact(ir, chip, path, lns_sbdb="ideal"):
    source = path.with_suffix(".mlir")
    source.write_text(ir)
    subprocess.run([tools.tool("lamina-compile"), str(source), "-o",
                    str(path), f"--chip={chip}", f"--lns-sbdb={lns_sbdb}",
                    f"--emit-ptx={path.with_suffix('.ptx')}"],
                   check=True)


def prepare(out, bench=True):
    """Writes the artefacts, inputs, CPU results and manifest.json."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"checks": [], "bench": []}

    for number, check in enumerate(cases.CHECKS):
        check = cases.resolved(check)
        name = check["name"]
        rng = np.random.default_rng(1000 + number)
        data_of = check.get("same_as", name)
        inputs, files = [], []
        for input_name, kind, shape in check["inputs"]:
            if kind == "i64":
                inputs.append(("i64", shape))
                files.append({"scalar": shape})
                continue
            array = make_input(kind, shape, rng)
            path = out / f"{data_of}.{input_name}.npy"
            if data_of == name:
                np.save(path, array)
            else:
                array = np.load(path)
            inputs.append(array)
            files.append({"file": path.name, "dtype": kind})
        expected = tools.run_ir(check["ir"], inputs, out / f"{name}.cpu")
        results = []
        for i, ((kind, shape), value) in enumerate(zip(check["results"],
                                                       expected)):
            path = out / f"{name}.expected{i}.npy"
            np.save(path, value)
            results.append({"file": path.name, "dtype": kind,
                            "shape": list(shape)})
        artefact = out / f"lib{name}.so"
        compile_artefact(check["ir"], check["chip"], artefact,
                         check.get("lns_sbdb", "ideal"))
        manifest["checks"].append({
            "name": name, "chip": check["chip"], "artefact": artefact.name,
            "inputs": files, "results": results,
            "compare": check["compare"]})
        print(f"prepared {name}", flush=True)

    for number, check in enumerate(cases.BACKWARD_CHECKS):
        manifest["checks"].append(
            prepare_backward_check(number, cases.resolved(check), out))
        print(f"prepared {check['name']}", flush=True)

    for m, k, n in cases.BENCH_SHAPES if bench else []:
        artefact = out / f"libbench_{m}x{k}x{n}.so"
        compile_artefact(cases.BENCH_IR.format(m=m, k=k, n=n), "sm_90a",
                         artefact)
        manifest["bench"].append({"shape": [m, k, n],
                                  "artefact": artefact.name})
        print(f"prepared bench {m}x{k}x{n}", flush=True)

    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/gpu-device")
    args = parser.parse_args()
    prepare(args.out)
    out = pathlib.Path(args.out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
