#!/usr/bin/python3
"""Writes a seed corpus for each fuzzer into OUT/<fuzzer>/ (OUT: argument,
default build-fuzz/seeds): the IR of test/ and examples/ split at lit's
`// -----` markers, comments dropped (each harness takes the pieces it can
use), .npy files of every supported dtype, and argument lists for the
run-args harness. A campaign starts from these; what it keeps, minimised,
is committed, packed, as test/fuzz/corpus.tar.xz."""

import hashlib
import io
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Which IR pieces each IR harness starts from.
IR_FUZZERS = {
    "parse": lambda text: True,
    "decompose": lambda text: "lamina." in text,
    "partition": lambda text: "lamina." in text,
    "cpu": lambda text: "func.func" in text and "gpu." not in text,
    "lns": lambda text: "lns." in text,
    "gpu": lambda text: "lamina." in text or "gpu.module" in text,
    "backward": lambda text: "func.func" in text and "lamina." in text,
    "schedule": lambda text: "@__transform_main" in text,
}


def ir_pieces():
    files = sorted(ROOT.glob("test/**/*.mlir")) + sorted(ROOT.glob("examples/*.mlir"))
    for path in files:
        for piece in path.read_text().split("// -----"):
            lines = [line for line in piece.splitlines()
                     if not line.lstrip().startswith("//")]
            text = "\n".join(lines).strip() + "\n"
            if text.strip():
                yield text


def npy(array, version=(1, 0)):
    out = io.BytesIO()
    np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


def npy_seeds():
    rng = np.random.default_rng(0)
    yield npy(rng.standard_normal((2, 3)).astype(np.float32))
    yield npy(rng.standard_normal((4,)).astype(np.float64))
    yield npy(rng.standard_normal((2, 2)).astype(np.float16))
    yield npy(np.arange(6, dtype=np.int64).reshape(3, 2))
    yield npy(np.arange(3, dtype=np.int32))
    yield npy(np.arange(4, dtype=np.uint16))
    yield npy(np.float32(1.5))
    yield npy(np.zeros((0, 3), np.float32))
    yield npy(np.ones((2, 2), np.float32), version=(2, 0))
    yield npy(np.asfortranarray(np.ones((2, 3), np.float32)))


def run_args_seeds():
    rng = np.random.default_rng(1)
    x = npy(rng.standard_normal((2, 3, 8)).astype(np.float32))
    w = npy(rng.standard_normal((16, 8)).astype(np.float32))
    b = npy(rng.standard_normal((16,)).astype(np.float32))
    sep = b"@@\n"
    yield sep.join([x, w, b, b"i64:7"])
    yield sep.join([x, w, b, b"i64:-1"])
    yield sep.join([x, w, b])
    yield sep.join([w, x, b, b"i64:7"])
    yield sep.join([x, w, b, b"f32:0.5"])


def write(directory, blobs):
    directory.mkdir(parents=True, exist_ok=True)
    for blob in blobs:
        if isinstance(blob, str):
            blob = blob.encode()
        (directory / hashlib.sha1(blob).hexdigest()).write_bytes(blob)


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build-fuzz/seeds")
    pieces = list(ir_pieces())
    for name, wanted in IR_FUZZERS.items():
        write(out / name, [p for p in pieces if wanted(p)])
    write(out / "npy", npy_seeds())
    write(out / "run-args", run_args_seeds())
    for directory in sorted(out.iterdir()):
        print(f"{directory.name}: {len(list(directory.iterdir()))} seeds")


if __name__ == "__main__":
    main()
