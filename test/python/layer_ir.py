"""IR text for single Slapo layers, used by the numerics tests."""


def tensor(shape, element):
    return "tensor<" + "x".join(str(s) for s in shape) + f"x{element}>"


def linear_layer(op, x_shape, n, element="f32", result_element=None,
                 bias=True, attrs="", seed=False, qkv_heads=None):
    """`func.func @main` applying one lamina layer op to (x, w[, b][, seed])."""
    result_element = result_element or element
    k = x_shape[-1]
    x_t = tensor(x_shape, element)
    w_t = tensor((n, k), element)
    b_t = tensor((n,), element)
    args = [f"%x: {x_t}", f"%w: {w_t}"]
    operands = "%x, %w"
    types = [x_t, w_t]
    if bias:
        args.append(f"%b: {b_t}")
        operands += " bias %b"
        types.append(b_t)
    operands += f" {attrs}" if attrs else ""
    if seed:
        args.append("%seed: i64")
        operands += " seed %seed"
        types.append("i64")
    if qkv_heads is not None:
        heads, head_dim = qkv_heads
        out_t = tensor(tuple(x_shape[:-1]) + (heads, head_dim), result_element)
        return f"""
func.func @main({", ".join(args)}) -> ({out_t}, {out_t}, {out_t}) {{
  %q, %k, %v = lamina.fused_qkv "qkv" {operands}
      : ({", ".join(types)}) -> ({out_t}, {out_t}, {out_t})
  return %q, %k, %v : {out_t}, {out_t}, {out_t}
}}
"""
    y_t = tensor(tuple(x_shape[:-1]) + (n,), result_element)
    return f"""
func.func @main({", ".join(args)}) -> {y_t} {{
  %y = lamina.{op} "layer" {operands} : ({", ".join(types)}) -> {y_t}
  return %y : {y_t}
}}
"""
