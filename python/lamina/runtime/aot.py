"""Call Lamina's ahead-of-time GPU artefacts from Python.

`lamina-compile model.mlir -o libmodel.so` writes a shared library that needs
only the CUDA driver; this module loads it with ctypes and calls its entry
points on PyTorch CUDA tensors. It imports nothing else from Lamina, so it
also works where only the artefact and PyTorch are installed (load it by
file path there).

    art = Artefact("libmodel.so")
    if (why := art.gpu_unavailable()) is not None: ...
    out = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    art.call("mlp", x, w, b, out)          # inputs, then out-parameters

Entry points take device buffers (contiguous tensors) and i64 scalars in the
order of the IR function's arguments, then one tensor per result. Calls run
on PyTorch's current stream and return without synchronising.
"""

import ctypes


class _Descriptor:
    """ctypes structs of ranked memref descriptors, one class per rank."""

    _classes = {}

    @classmethod
    def of(cls, tensor):
        rank = tensor.dim()
        struct = cls._classes.get(rank)
        if struct is None:
            struct = type(f"MemRef{rank}D", (ctypes.Structure,), {
                "_fields_": [("allocated", ctypes.c_void_p),
                             ("aligned", ctypes.c_void_p),
                             ("offset", ctypes.c_int64),
                             ("sizes", ctypes.c_int64 * rank),
                             ("strides", ctypes.c_int64 * rank)]})
            cls._classes[rank] = struct
        if not tensor.is_contiguous():
            raise ValueError("Lamina's GPU entry points take contiguous tensors")
        pointer = tensor.data_ptr()
        return struct(pointer, pointer, 0,
                      (ctypes.c_int64 * rank)(*tensor.shape),
                      (ctypes.c_int64 * rank)(*tensor.stride()))


class Artefact:
    """A shared library written by lamina-compile."""

    def __init__(self, path):
        self.path = str(path)
        self.library = ctypes.CDLL(self.path)
        self.library.laminaCudaInit.restype = ctypes.c_char_p
        self.library.laminaCudaUseStream.argtypes = [ctypes.c_void_p]
        self.library.laminaCudaUseStream.restype = None

    def gpu_unavailable(self):
        """None when a GPU can be used, else the reason (no driver, no GPU)."""
        reason = self.library.laminaCudaInit()
        return reason.decode() if reason else None

    def call(self, name, *args, stream=None):
        """Runs entry point `name` on `args` (tensors and ints, in order).

        `stream` (a torch.cuda.Stream) defaults to the current stream.
        """
        import torch

        function = getattr(self.library, "_mlir_ciface_" + name)
        function.restype = None
        values, keep = [], []
        for arg in args:
            if isinstance(arg, int):
                values.append(ctypes.c_int64(arg))
            else:
                if not arg.is_cuda:
                    raise ValueError(f"{name}: tensors must be on the GPU")
                descriptor = _Descriptor.of(arg)
                keep.append(descriptor)
                values.append(ctypes.byref(descriptor))
        stream = stream or torch.cuda.current_stream()
        self.library.laminaCudaUseStream(ctypes.c_void_p(stream.cuda_stream))
        try:
            function(*values)
        finally:
            self.library.laminaCudaUseStream(None)
