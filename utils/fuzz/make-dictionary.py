#!/usr/bin/python3
"""Writes test/fuzz/mlir.dict, libFuzzer's token dictionary for the IR
harnesses: every lamina, lns and transform.lamina op name (from the
dialects' TableGen files) and the keywords, attribute names and types that
Lamina's IR spells."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIALECTS = {
    "lamina": ROOT / "dialects/Lamina/IR/LaminaOps.td",
    "lns": ROOT / "dialects/Lns/IR/LnsOps.td",
    "transform.lamina": ROOT / "dialects/Lamina/TransformOps/LaminaTransformOps.td",
}
WORDS = """
func.func return module attributes tensor vector memref index i1 i32 i64 f16
bf16 f32 f64 !lns.num<f !lns.num<f=10> #lamina.layout<R> #lamina.layout<P>
#lamina.layout<S(0)> #lamina.layout<S(1)> S( lamina.world_size
#lamina.layout<[dp:S(0),tp:S(1)]> lamina.grid dp: tp: pp:
#lamina.training_pair<forward=@f,backward=@g,saved=0,gradients=[0]>
#lamina.packed_weights<[tensor<2x8x16xf32>]from[1]> lamina.weight_packing
lamina.pipeline_cut lamina.checkpoint lamina.layer_path lamina.training
bias activation dropout seed training gelu gelu_tanh relu silu sigmoid none
rope interleaved halves shard.process_multi_index
weight input output axis path fwd_pre fwd_post bwd_pre bwd_post all_reduce
all_gather reduce_scatter scatter transform.named_sequence @__transform_main
transform.yield transform.any_op transform.with_named_sequence
transform.readonly transform.consumed arith.constant dense<> tensor.empty
linalg.matmul linalg.transpose tensor.extract_slice tensor.insert_slice
tensor.collapse_shape tensor.expand_shape tensor.concat shard.grid
shard.all_reduce shard.all_gather shard.shard gpu.module nvvm. <p=0.1,training>
0x7fffffffffffffff -9223372036854775808 ? x 0x 1x : -> ( ) { } [ ] < > % @
""".split()


def main():
    tokens = set(WORDS)
    for prefix, td in DIALECTS.items():
        for name in re.findall(r'Op<"([a-z_.]+)"', td.read_text()):
            tokens.add(f"{prefix}.{name}")
    lines = [f'"{token}"' for token in sorted(tokens)]
    # The run-args harness's separator, a .npy magic and header keys.
    lines += ['"@@\\x0a"', '"\\x93NUMPY\\x01\\x00"', "\"'descr': '<f4'\"",
              "\"'fortran_order': False\"", "\"'shape': (\""]
    out = ROOT / "test/fuzz/mlir.dict"
    out.write_text("# libFuzzer dictionary (utils/fuzz/make-dictionary.py)\n"
                   + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
