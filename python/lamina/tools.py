"""Locating and running the command-line tools of a Lamina build."""

import os
import pathlib
import subprocess

import numpy as np

# This file is copied to <build>/python/lamina/tools.py by the build.
_BUILD = pathlib.Path(__file__).resolve().parents[2]


def build_dir():
    """The build tree: $LAMINA_BUILD_DIR, else the one holding this package."""
    return pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", _BUILD))


def tool(name):
    path = build_dir() / "bin" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; build Lamina first")
    return str(path)


def _input_arguments(inputs, workdir):
    """lamina-run --input flags: arrays saved as .npy in `workdir`,
    ("i64", value) scalars inline."""
    args = []
    for i, value in enumerate(inputs):
        if isinstance(value, tuple):
            kind, scalar = value
            args.append(f"--input={kind}:{scalar}")
        else:
            path = workdir / f"input{i}.npy"
            np.save(path, value)
            args.append(f"--input={path}")
    return args


def run_ir(ir_text, inputs, workdir, entry="main", pipeline=None,
           extra_args=()):
    """Compiles `ir_text` with lamina-run and calls `entry` on `inputs`.

    `inputs` are NumPy arrays (written as .npy) or ("i64", value) scalars.
    Returns the list of result arrays.
    """
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "program.mlir"
    source.write_text(ir_text)
    args = [tool("lamina-run"), str(source), f"--entry={entry}",
            f"--output-dir={workdir / 'out'}"]
    if pipeline:
        args.append(f"--pipeline={pipeline}")
    args += _input_arguments(inputs, workdir)
    args.extend(extra_args)
    completed = subprocess.run(args, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(
            f"lamina-run failed ({completed.returncode}):\n"
            f"{completed.stdout}\n{completed.stderr}")
    results = sorted((workdir / "out").glob("result*.npy"),
                     key=lambda p: int(p.stem[len("result"):]))
    return [np.load(p) for p in results]


# Lamina links MPICH; only MPICH's launcher starts one MPI world.
MPI_LAUNCHER = "mpirun.mpich"


def run_ir_on_ranks(ranks, ir_path, inputs, workdir, entry="main",
                    schedule=None, world_size=None, timeout=300, extra=()):
    """Runs `entry` of the IR file `ir_path` (after `schedule`, a transform
    script file) with `mpirun.mpich -np ranks lamina-run`.

    `inputs` are whole NumPy arrays or ("i64", value) scalars; every rank
    reads them all and takes its blocks. Checks that every rank ran in a
    world of `ranks` processes and returns, per rank, the list of the
    arrays it returned (its blocks of sharded results). `world_size`
    declares the module for that many ranks (lamina-run --world-size);
    `extra` are more lamina-run options (e.g. --backward).
    """
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    args = [MPI_LAUNCHER, "-np", str(ranks), tool("lamina-run"), str(ir_path),
            f"--entry={entry}", f"--output-dir={workdir / 'out'}"]
    if schedule:
        args.append(f"--schedule={schedule}")
    if world_size:
        args.append(f"--world-size={world_size}")
    args += _input_arguments(inputs, workdir) + list(extra)
    completed = subprocess.run(args, capture_output=True, text=True,
                               timeout=timeout)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args[:3])} lamina-run failed "
            f"({completed.returncode}):\n{completed.stdout}\n"
            f"{completed.stderr}")
    if ranks > 1:
        for rank in range(ranks):
            line = (f"[rank {rank}/{ranks}] running in an MPI world of "
                    f"{ranks} ranks")
            if line not in completed.stdout:
                raise RuntimeError(f"rank {rank} did not report a world of "
                                   f"{ranks}:\n{completed.stdout}")
    outputs = []
    for rank in range(ranks):
        suffix = f".rank{rank}" if ranks > 1 else ""
        files = sorted((workdir / "out").glob(f"result*{suffix}.npy"),
                       key=lambda p: int(p.name.split(".")[0][len("result"):]))
        outputs.append([np.load(p) for p in files])
    return outputs
