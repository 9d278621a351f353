# -*- Python -*-
# lit configuration for Lamina's IR tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "LAMINA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "lib"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lamina_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%lamina_src", config.lamina_src_root))
config.substitutions.append(("%lamina_obj", config.lamina_obj_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Each test compiles what it checks (--mlir-timing stages, diagnostics);
# the compile cache's own test turns it on in a directory of its own.
config.environment["LAMINA_CACHE"] = "0"

tool_dirs = [config.lamina_tools_dir, config.llvm_tools_dir]
tools = ["lamina-compile", "lamina-opt", "lamina-run"]
llvm_config.add_tool_substitutions(tools, tool_dirs)


# A CUDA toolkit (ptxas, fatbinary, libdevice) is optional: PTX is checked by
# FileCheck everywhere, assembled by ptxas where a toolkit is installed.
def find_cuda_toolkit():
    for variable in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"):
        path = os.environ.get(variable)
        if path:
            return path
    return "/usr/local/cuda" if os.path.isdir("/usr/local/cuda") else None


cuda_toolkit = find_cuda_toolkit()
if cuda_toolkit and os.access(os.path.join(cuda_toolkit, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", os.path.join(cuda_toolkit, "bin", "ptxas")))

# A C compiler for test fixtures (the stand-in CUDA driver): Lamina's own
# dependencies include clang-22; `cc` may not exist.
import shutil

config.substitutions.append(
    ("%host_cc", shutil.which("cc") or shutil.which("clang-22") or "clang-22"))

# A CUDA driver (and so possibly a GPU): GPU execution tests run only there.
import ctypes

try:
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
