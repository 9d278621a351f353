"""A pytest plugin that runs Slapo's own tests (awslabs/slapo, `tests/`)
against `lamina.slapo` on a CPU machine, without editing Slapo's files:

- `import slapo` (and `slapo.<module>`) resolves to `lamina.slapo`;
- `torch.distributed` runs on gloo where the tests ask for NCCL, its ranks
  the MPI ranks (`mpirun.mpich -np N`) or one process, with the
  environment torchrun would give (RANK, WORLD_SIZE, LOCAL_RANK, ...);
- CUDA is the CPU: `.cuda()` is the tensor or module itself, `"cuda"` /
  `"cuda:N"` device arguments mean the CPU, `torch.cuda.set_device` does
  nothing;
- a case that imports HuggingFace transformers, torchvision, DeepSpeed,
  Megatron or a CUDA kernel library that is not installed is skipped,
  naming the package; `mock` (PyPI's backport) is the standard library's
  `unittest.mock` where it is not installed.

Used by utils/run-slapo-tests.sh (`-p lamina_slapo_plugin`)."""

import functools
import importlib
import importlib.abc
import importlib.util
import os
import sys

import pytest
import torch
import torch.distributed as dist
from torch import nn

# Packages Slapo's tests use that are not part of a CPU machine's stack.
_NOT_INSTALLED = ("transformers", "torchvision", "deepspeed", "megatron",
                  "xformers", "triton", "flash_attn", "apex")


class _SlapoAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`slapo` and `slapo.x.y` are `lamina.slapo` and `lamina.slapo.x.y`."""

    def find_spec(self, name, path=None, target=None):
        if name != "slapo" and not name.startswith("slapo."):
            return None
        real = "lamina." + name
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return importlib.import_module("lamina." + spec.name)

    def exec_module(self, module):
        pass


class _SkipMissing(importlib.abc.MetaPathFinder):
    """Asked last: a package of _NOT_INSTALLED that nothing else found
    skips the case (or the file) that imports it."""

    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in _NOT_INSTALLED:
            pytest.skip(f"needs {top}, which is not installed",
                        allow_module_level=True)
        return None


def _cpu(device):
    """A device argument with CUDA read as the CPU."""
    if isinstance(device, torch.device):
        return torch.device("cpu") if device.type == "cuda" else device
    if isinstance(device, str) and device.startswith("cuda"):
        return "cpu"
    if isinstance(device, int):
        return "cpu"
    return device


def _on_cpu(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return function(*args, **kwargs)
    return wrapper


def _cuda_is_the_cpu():
    torch.Tensor.cuda = lambda self, *args, **kwargs: self
    nn.Module.cuda = lambda self, *args, **kwargs: self
    torch.cuda.set_device = lambda device: None
    torch.cuda.current_device = lambda: 0
    # The device's generator is the CPU's (which compiled dropout draws
    # from).
    # (torch.manual_seed calls torch.cuda.manual_seed_all itself.)
    torch.cuda.manual_seed = torch.cuda.manual_seed_all = \
        lambda seed: torch.default_generator.manual_seed(seed) and None
    torch.cuda.get_rng_state = lambda device="cuda": torch.get_rng_state()
    torch.cuda.set_rng_state = \
        lambda state, device="cuda": torch.set_rng_state(state)
    torch.cuda.initial_seed = torch.initial_seed
    tensor_to, module_to = torch.Tensor.to, nn.Module.to

    def to_tensor(self, *args, **kwargs):
        args = tuple(_cpu(a) if isinstance(a, (str, torch.device)) else a
                     for a in args)
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return tensor_to(self, *args, **kwargs)

    def to_module(self, *args, **kwargs):
        args = tuple(_cpu(a) if isinstance(a, (str, torch.device, int))
                     and not isinstance(a, bool) else a for a in args)
        if "device" in kwargs:
            kwargs["device"] = _cpu(kwargs["device"])
        return module_to(self, *args, **kwargs)

    torch.Tensor.to, nn.Module.to = to_tensor, to_module
    for name in ("randn", "rand", "randint", "zeros", "ones", "empty",
                 "full", "tensor", "arange", "zeros_like", "ones_like",
                 "empty_like", "randn_like", "rand_like"):
        setattr(torch, name, _on_cpu(getattr(torch, name)))


def _distributed_like_torchrun():
    """The environment torchrun gives each process, from MPICH's."""
    rank = os.environ.get("PMI_RANK", "0")
    size = os.environ.get("PMI_SIZE", "1")
    os.environ.setdefault("RANK", rank)
    os.environ.setdefault("LOCAL_RANK", rank)
    os.environ.setdefault("WORLD_SIZE", size)
    os.environ.setdefault("LOCAL_WORLD_SIZE", size)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    init = dist.init_process_group

    @functools.wraps(init)
    def init_on_gloo(backend=None, *args, **kwargs):
        if dist.is_initialized():
            return None
        return init("gloo", *args, **kwargs)

    dist.init_process_group = init_on_gloo


def pytest_configure(config):
    if importlib.util.find_spec("mock") is None:
        import unittest.mock
        sys.modules["mock"] = unittest.mock
    sys.meta_path.insert(0, _SlapoAlias())
    sys.meta_path.append(_SkipMissing())
    _cuda_is_the_cpu()
    _distributed_like_torchrun()
