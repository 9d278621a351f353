"""The GPU checks and benchmark shapes, shared by prepare.py (here, with
Lamina) and run_device.py (on the GPU machine, with PyTorch only).

A check is a small program compiled ahead of time whose inputs and CPU-path
results are saved as .npy; the GPU must reproduce the results (float
outputs within a tolerance, dropout masks and LNS codes exactly).
"""

BF16 = "bf16"
F16 = "f16"
F32 = "f32"

# name, chip, IR function (one per file), inputs as (name, dtype, shape) or
# ("seed", "i64", value), result dtypes, comparison.
CHECKS = [
    {
        "name": "gelu_bf16_wide",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<256x256xbf16>, %w: tensor<512x256xbf16>, %b: tensor<512xbf16>) -> tensor<256x512xbf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<256x256xbf16>, tensor<512x256xbf16>, tensor<512xbf16>) -> tensor<256x512xbf16>
  return %y : tensor<256x512xbf16>
}""",
        "inputs": [("x", BF16, (256, 256)), ("w", BF16, (512, 256)),
                   ("b", BF16, (512,))],
        "results": [(BF16, (256, 512))],
        "compare": "float",
    },
    {
        "name": "dropout_f16_decode",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<2x8x512xf16>, %w: tensor<200x512xf16>, %b: tensor<200xf32>, %seed: i64) -> tensor<2x8x200xf32> {
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.1, training> seed %seed
      : (tensor<2x8x512xf16>, tensor<200x512xf16>, tensor<200xf32>, i64) -> tensor<2x8x200xf32>
  return %y : tensor<2x8x200xf32>
}""",
        "inputs": [("x", F16, (2, 8, 512)), ("w", F16, (200, 512)),
                   ("b", F32, (200,)), ("seed", "i64", 1234)],
        "results": [(F32, (2, 8, 200))],
        "compare": "dropout",
    },
    {
        "name": "gelu_erf_partial_tiles",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<200x256xbf16>, %w: tensor<384x256xbf16>, %b: tensor<384xbf16>) -> tensor<200x384xf32> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_erf
      : (tensor<200x256xbf16>, tensor<384x256xbf16>, tensor<384xbf16>) -> tensor<200x384xf32>
  return %y : tensor<200x384xf32>
}""",
        "inputs": [("x", BF16, (200, 256)), ("w", BF16, (384, 256)),
                   ("b", BF16, (384,))],
        "results": [(F32, (200, 384))],
        "compare": "float",
    },
    {
        "name": "silu_bf16_partial_tiles",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<200x256xbf16>, %w: tensor<384x256xbf16>, %b: tensor<384xbf16>) -> tensor<200x384xf32> {
  %y = lamina.linear_act "gate_proj" %x, %w bias %b activation silu
      : (tensor<200x256xbf16>, tensor<384x256xbf16>, tensor<384xbf16>) -> tensor<200x384xf32>
  return %y : tensor<200x384xf32>
}""",
        "inputs": [("x", BF16, (200, 256)), ("w", BF16, (384, 256)),
                   ("b", BF16, (384,))],
        "results": [(F32, (200, 384))],
        "compare": "float",
    },
    {
        "name": "mlp_two_layers",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<128x64xbf16>, %w1: tensor<384x64xbf16>, %b1: tensor<384xbf16>,
                %w2: tensor<64x384xbf16>, %b2: tensor<64xbf16>) -> tensor<128x64xbf16> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation relu
      : (tensor<128x64xbf16>, tensor<384x64xbf16>, tensor<384xbf16>) -> tensor<128x384xbf16>
  %y = lamina.linear "fc2" %h, %w2 bias %b2
      : (tensor<128x384xbf16>, tensor<64x384xbf16>, tensor<64xbf16>) -> tensor<128x64xbf16>
  return %y : tensor<128x64xbf16>
}""",
        "inputs": [("x", BF16, (128, 64)), ("w1", BF16, (384, 64)),
                   ("b1", BF16, (384,)), ("w2", BF16, (64, 384)),
                   ("b2", BF16, (64,))],
        "results": [(BF16, (128, 64))],
        "compare": "float",
    },
    {
        "name": "gelu_bf16_mma_sync",
        "chip": "sm_80",
        "ir": None,  # gelu_bf16_wide's program, mma.sync kernel (PTX JIT)
        "same_as": "gelu_bf16_wide",
        "compare": "float",
    },
    {
        "name": "dropout_f16_mma_sync",
        "chip": "sm_80",
        "ir": None,
        "same_as": "dropout_f16_decode",
        "compare": "dropout",
    },
    {
        "name": "lns_f10_ideal",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<4x64x!lns.num<f = 10>>, %w: tensor<32x64x!lns.num<f = 10>>, %b: tensor<32x!lns.num<f = 12>>) -> tensor<4x32x!lns.num<f = 10>> {
  %y = lamina.linear "fc" %x, %w bias %b : (tensor<4x64x!lns.num<f = 10>>, tensor<32x64x!lns.num<f = 10>>, tensor<32x!lns.num<f = 12>>) -> tensor<4x32x!lns.num<f = 10>>
  return %y : tensor<4x32x!lns.num<f = 10>>
}""",
        "inputs": [("x", "lns10", (4, 64)), ("w", "lns10", (32, 64)),
                   ("b", "lns12", (32,))],
        "results": [("i64", (4, 32))],
        "compare": "codes",
    },
    {
        "name": "lns_f10_table",
        "chip": "sm_90a",
        "lns_sbdb": "table",
        "ir": None,
        "same_as": "lns_f10_ideal",
        "compare": "codes",
    },
    {
        "name": "lns_f8_table_shared",
        "chip": "sm_90a",
        "lns_sbdb": "table",
        "ir": """
func.func @main(%x: tensor<4x64x!lns.num<f = 8>>, %w: tensor<32x64x!lns.num<f = 8>>) -> tensor<4x32x!lns.num<f = 8>> {
  %y = lamina.linear "fc" %x, %w : (tensor<4x64x!lns.num<f = 8>>, tensor<32x64x!lns.num<f = 8>>) -> tensor<4x32x!lns.num<f = 8>>
  return %y : tensor<4x32x!lns.num<f = 8>>
}""",
        "inputs": [("x", "lns8", (4, 64)), ("w", "lns8", (32, 64))],
        "results": [("i64", (4, 32))],
        "compare": "codes",
    },
    {
        "name": "lns_f23_ideal_k1024",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<8x1024x!lns.num<f = 23>>, %w: tensor<64x1024x!lns.num<f = 23>>) -> tensor<8x64x!lns.num<f = 23>> {
  %y = lamina.linear "fc" %x, %w : (tensor<8x1024x!lns.num<f = 23>>, tensor<64x1024x!lns.num<f = 23>>) -> tensor<8x64x!lns.num<f = 23>>
  return %y : tensor<8x64x!lns.num<f = 23>>
}""",
        "inputs": [("x", "lns23", (8, 1024)), ("w", "lns23", (64, 1024))],
        "results": [("i64", (8, 64))],
        "compare": "codes",
    },
]

# Backward checks: the forward program above; prepare.py differentiates it
# (lamina-generate-backward), compiles @main_backward for the GPU and takes
# the expected gradients from the CPU pipeline's f32 backward on the same
# (rounded) arguments, saved values and cotangents.
BACKWARD_CHECKS = [
    {
        "name": "mlp_backward_bf16",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<128x64xbf16>, %w1: tensor<256x64xbf16>, %b1: tensor<256xbf16>,
                %w2: tensor<64x256xbf16>, %b2: tensor<64xbf16>) -> tensor<128x64xbf16> {
  %h = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh
      : (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  %y = lamina.linear "fc2" %h, %w2 bias %b2
      : (tensor<128x256xbf16>, tensor<64x256xbf16>, tensor<64xbf16>) -> tensor<128x64xbf16>
  return %y : tensor<128x64xbf16>
}""",
        "inputs": [("x", BF16, (128, 64)), ("w1", BF16, (256, 64)),
                   ("b1", BF16, (256,)), ("w2", BF16, (64, 256)),
                   ("b2", BF16, (64,))],
    },
    {
        "name": "linear_silu_backward_bf16",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<128x64xbf16>, %w: tensor<256x64xbf16>, %b: tensor<256xbf16>) -> tensor<128x256xbf16> {
  %y = lamina.linear_act "gate_proj" %x, %w bias %b activation silu
      : (tensor<128x64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  return %y : tensor<128x256xbf16>
}""",
        "inputs": [("x", BF16, (128, 64)), ("w", BF16, (256, 64)),
                   ("b", BF16, (256,))],
    },
    {
        "name": "mlp_backward_bf16_mma_sync",
        "chip": "sm_80",
        "ir": None,
        "same_as": "mlp_backward_bf16",
    },
    {
        "name": "linear_gelu_erf_backward_f16_partial_tiles",
        "chip": "sm_90a",
        "ir": """
func.func @main(%x: tensor<200x256xf16>, %w: tensor<384x256xf16>, %b: tensor<384xf16>) -> tensor<200x384xf16> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_erf
      : (tensor<200x256xf16>, tensor<384x256xf16>, tensor<384xf16>) -> tensor<200x384xf16>
  return %y : tensor<200x384xf16>
}""",
        "inputs": [("x", F16, (200, 256)), ("w", F16, (384, 256)),
                   ("b", F16, (384,))],
    },
]

# Fused linear + bias + GELU(tanh), bf16 in and out: (M, K, N).
BENCH_SHAPES = [(8192, 8192, 8192), (4096, 4096, 16384), (16, 8192, 8192)]

BENCH_IR = """
func.func @main(%x: tensor<{m}x{k}xbf16>, %w: tensor<{n}x{k}xbf16>, %b: tensor<{n}xbf16>) -> tensor<{m}x{n}xbf16> {{
  %y = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<{m}x{k}xbf16>, tensor<{n}x{k}xbf16>, tensor<{n}xbf16>) -> tensor<{m}x{n}xbf16>
  return %y : tensor<{m}x{n}xbf16>
}}"""

H200_BF16_DENSE_TFLOPS = 989.0
H200_HBM_GBPS = 4800.0


def resolved(check):
    """`check` with the IR and tensors of the check it shares them with."""
    if check.get("same_as") is None:
        return check
    base = next(c for c in CHECKS + BACKWARD_CHECKS
                if c["name"] == check["same_as"])
    merged = dict(base)
    merged.update({k: v for k, v in check.items() if v is not None})
    return merged
