//===- LnsOps.td - Operations of the lns dialect -----------*- tablegen -*-===//

#ifndef LAMINA_LNS_OPS_TD
#define LAMINA_LNS_OPS_TD

include "Lns/IR/LnsDialect.td"
include "Lns/IR/LnsTypes.td"
include "Lns/IR/LnsAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Lns_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lns_Dialect, mnemonic, !listconcat(traits, [Pure])>;

//===----------------------------------------------------------------------===//
// Constants and conversions
//===----------------------------------------------------------------------===//

def Lns_ConstantOp : Lns_Op<"constant", [ConstantLike]> {
  let summary = "LNS constant given by its packed int64 codes";
  let description = [{
    The value is given as packed codes (i64), scalar or dense with the
    result's shape.

    ```mlir
    %one = lns.constant 0 : i64 -> !lns.num<f = 10>
    %v = lns.constant dense<[0, -9007199254740991]> : tensor<2xi64>
           -> tensor<2x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins TypedAttrInterface:$value);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$value attr-dict `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Lns_EncodeOp : Lns_Op<"encode", [SameOperandsAndResultShape]> {
  let summary = "round a float to the nearest LNS code";
  let description = [{
    `x == 0 → Z`, else `e = roundHalfEven(log|x| / log b)` in double and
    `p = (e << 1) | (x < 0)`.

    NaN and ±inf have no code in the spec; a compiled program cannot stop
    at run time, so it gives NaN the zero code `Z` and ±inf the largest
    code of its sign, `(2^63 − 2) | (x < 0)`. Python's `lamina.lns.encode`
    and `lamina.lns_numpy.encode` reject them before anything runs.

    ```mlir
    %c = lns.encode %x : tensor<4xf64> -> tensor<4x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnyFloat, TensorOf<[AnyFloat]>]>:$input);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Lns_DecodeOp : Lns_Op<"decode", [SameOperandsAndResultShape]> {
  let summary = "the float value of an LNS code";
  let description = [{
    `isZero(p) → 0.0`, else `(s ? -1 : 1) · pow(b, e)` in double, then
    rounded to the result type.

    ```mlir
    %x = lns.decode %c : tensor<4x!lns.num<f = 10>> -> tensor<4xf64>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$input);
  let results = (outs AnyTypeOf<[AnyFloat, TensorOf<[AnyFloat]>]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Lns_ChangeBaseOp : Lns_Op<"change_base", [SameOperandsAndResultShape]> {
  let summary = "convert LNS codes to another base";
  let description = [{
    `isZero → Z` (both zero codes), else
    `e' = roundHalfEven(e · log b_old / log b_new)` in double, sign kept.

    ```mlir
    %y = lns.change_base %x : tensor<4x!lns.num<f = 12>> -> tensor<4x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$input);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

//===----------------------------------------------------------------------===//
// Element-wise arithmetic
//===----------------------------------------------------------------------===//

class Lns_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Lns_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType])> {
  let arguments = (ins Lns_NumOrTensor:$input);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
}

def Lns_NegOp : Lns_UnaryOp<"neg"> {
  let summary = "negation: `p ^ 1` for every code";
  let description = [{
    Flips the sign bit of every code, zero included: `neg(Z)` is `-2^53`,
    the other zero code.

    ```mlir
    %y = lns.neg %x : tensor<4x!lns.num<f = 10>>
    ```
  }];
}

def Lns_AbsOp : Lns_UnaryOp<"abs"> {
  let summary = "absolute value: `isZero → Z`, else `p & ~1`";
  let description = [{
    ```mlir
    %y = lns.abs %x : !lns.num<f = 23>
    ```
  }];
}

def Lns_SqrtOp : Lns_UnaryOp<"sqrt"> {
  let summary = "square root of the magnitude: exponent `floor(e / 2)`";
  let description = [{
    `isZero → Z`, else `(p >> 1) & -2`: the exponent rounds toward −∞ and
    the sign is dropped (the root of a negative value is the root of its
    magnitude, as in the reference).

    ```mlir
    %y = lns.sqrt %x : tensor<3x!lns.num<f = 16>>
    ```
  }];
}

def Lns_PowIOp : Lns_Op<"powi", [SameOperandsAndResultType]> {
  let summary = "integer power";
  let description = [{
    `isZero → Z`, else `((p & -2) · n) & -2`, with the sign kept when `n` is
    odd.

    ```mlir
    %y = lns.powi %x, 3 : tensor<4x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$input, I64Attr:$exponent);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input `,` $exponent attr-dict `:` type($input)";
  let hasFolder = 1;
}

/// Binary element-wise ops: the right operand may be in another base and is
/// converted to the left operand's base (the spec's mixed-base rule); the
/// result has the left operand's type. Both operands are scalars or tensors
/// of one shape (checked by the verifier, which also handles scalars).
class Lns_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Lns_Op<mnemonic, !listconcat(traits,
                                   [AllTypesMatch<["lhs", "result"]>])> {
  let results = (outs Lns_NumOrTensor:$result);
  let hasVerifier = 1;
}

def Lns_MulOp : Lns_BinaryOp<"mul"> {
  let summary = "multiplication: exponents add, signs xor";
  let description = [{
    `isZero(x) ∨ isZero(y) → Z`, else `(x + y − (y & 1)) ^ (y & 1)`.

    ```mlir
    %z = lns.mul %x, %y : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasFolder = 1;
}

def Lns_DivOp : Lns_BinaryOp<"div"> {
  let summary = "division: exponents subtract, signs xor";
  let description = [{
    `isZero(x) → Z`, else `(x − y + (y & 1)) ^ (y & 1)`. Dividing by zero is
    an error: a constant zero divisor is rejected by the verifier; a zero
    divisor at run time is not checked (the kernels stay branch-free) and
    gives the formula's code `(x − Z + 1) ^ 1` for `y = Z`, which stands for
    no value of the spec — callers that cannot rule it out check first, as
    `lamina.lns.div` does (ZeroDivisionError).

    ```mlir
    %z = lns.div %x, %y : !lns.num<f = 23>, !lns.num<f = 23>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasFolder = 1;
}

def Lns_AddOp : Lns_BinaryOp<"add"> {
  let summary = "addition through Gaussian logarithms";
  let description = [{
    ```
    add(x, y): isZero(x) → y; isZero(y) → x; (x ^ 1) == y → Z;
               z = −|(x >> 1) − (y >> 1)|; s = (x ^ y) & 1;
               max(x, y) + sbdb(z, s)
    ```
    `sbdb` is selected by the `sbdb` attribute (`ideal` by default).

    ```mlir
    %z = lns.add %x, %y : tensor<4x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>>
    %t = lns.add %x, %y sbdb table : !lns.num<f = 10>, !lns.num<f = 10>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs,
                   DefaultValuedAttr<Lns_SbdbModeAttr,
                                     "SbdbMode::ideal">:$sbdb);
  let assemblyFormat = [{
    $lhs `,` $rhs (`sbdb` `` $sbdb^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
}

def Lns_SubOp : Lns_BinaryOp<"sub"> {
  let summary = "subtraction: `add(x, neg(y))`";
  let description = [{
    ```mlir
    %z = lns.sub %x, %y : tensor<4x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs,
                   DefaultValuedAttr<Lns_SbdbModeAttr,
                                     "SbdbMode::ideal">:$sbdb);
  let assemblyFormat = [{
    $lhs `,` $rhs (`sbdb` `` $sbdb^)? attr-dict `:` type($lhs) `,` type($rhs)
  }];
  let hasCanonicalizer = 1;
}

def Lns_MaxOp : Lns_BinaryOp<"max"> {
  let summary = "the larger operand in the reference's order";
  let description = [{
    `gt(x, y) ? x : y`, with `gt` the order of `lns.cmp` (sign, then
    exponent; the zero codes take part with their bits).

    ```mlir
    %z = lns.max %x, %y : tensor<4x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Lns_MinOp : Lns_BinaryOp<"min"> {
  let summary = "the smaller operand in the reference's order";
  let description = [{
    `lt(x, y) ? x : y`, with `lt` the order of `lns.cmp`.

    ```mlir
    %z = lns.min %x, %y : !lns.num<f = 10>, !lns.num<f = 10>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Lns_CmpOp : Lns_Op<"cmp"> {
  let summary = "element-wise comparison of LNS numbers";
  let description = [{
    `eq` and `ne` compare codes (the reference's `torch.eq` on packed codes:
    the two zero codes differ). `lt`, `le`, `gt` and `ge` order numbers by
    sign, then exponent `e = p >> 1`: a positive number is greater than a
    negative one; of two positives the larger exponent is greater, of two
    negatives the smaller. The zero codes take part with their bits: `Z` as
    a negative number of exponent −2^52, `-2^53` as a positive one. The
    right operand is converted to the left operand's base first.

    ```mlir
    %m = lns.cmp gt, %x, %y : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Lns_ComparePredicateAttr:$predicate,
                   Lns_NumOrTensor:$lhs, Lns_NumOrTensor:$rhs);
  let results = (outs AnyTypeOf<[I1, TensorOf<[I1]>]>:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lns_ReluOp : Lns_Op<"relu", [SameOperandsAndResultType]> {
  let summary = "rectifier on the sign bit: `(p & 1) ? Z : p`";
  let description = [{
    Every code with the sign bit set becomes `Z` (`Z` itself included);
    `-2^53`, whose sign bit is clear, is kept, as in the reference.

    ```mlir
    %y = lns.relu %x : tensor<8x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$input);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Lns_ReluGradOp : Lns_Op<"relu_grad", [SameOperandsAndResultType]> {
  let summary = "the rectifier's backward: `mul(g, isZero(out) ? Z : c1)`";
  let description = [{
    Given the upstream gradient `g` and the forward's result `out`, the
    gradient of the input: `Z` where `out` is zero (either code) or `g` is
    zero, else `g` bit for bit.

    ```mlir
    %gx = lns.relu_grad %g, %out : tensor<8x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$grad, Lns_NumOrTensor:$output);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$grad `,` $output attr-dict `:` type($grad)";
}

//===----------------------------------------------------------------------===//
// Reductions and contractions (the order of additions is part of the result)
//===----------------------------------------------------------------------===//

def Lns_SumOp : Lns_Op<"sum"> {
  let summary = "sum over dimensions, sequential by default";
  let description = [{
    Moves the reduced dimensions last, flattens them row-major and adds
    `acc = v[0]; acc = add(acc, v[i])` for `i = 1..n-1`. The `pairwise`
    order is an explicit, non-reference mode: level by level, element i of
    the next level is `add(v[2i], v[2i+1])` (an odd last element added to
    zero) until one is left — other codes than the reference's.

    ```mlir
    %r = lns.sum %x dims [1] : tensor<16x48x!lns.num<f = 10>> -> tensor<16x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_RankedTensor:$input, DenseI64ArrayAttr:$dims,
                   DefaultValuedAttr<Lns_ReductionOrderAttr,
                                     "ReductionOrder::sequential">:$order,
                   DefaultValuedAttr<Lns_SbdbModeAttr,
                                     "SbdbMode::ideal">:$sbdb);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = [{
    $input `dims` $dims (`order` `` $order^)? (`sbdb` `` $sbdb^)? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lns_MatmulOp : Lns_Op<"matmul"> {
  let summary = "matrix product with a sequential K loop";
  let description = [{
    `out[..., m, n]`: `acc = Z; for k in 0..K−1: acc = add(acc, mul(A[..., m, k], B[..., k, n]))`.
    Batch dimensions broadcast as in NumPy. `B` may be in another base and is
    converted to `A`'s base; the result has `A`'s base.

    ```mlir
    %c = lns.matmul %a, %b : tensor<4x8x!lns.num<f = 10>>, tensor<8x3x!lns.num<f = 10>>
           -> tensor<4x3x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_RankedTensor:$lhs, Lns_RankedTensor:$rhs,
                   DefaultValuedAttr<Lns_SbdbModeAttr,
                                     "SbdbMode::ideal">:$sbdb);
  let results = (outs Lns_RankedTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`sbdb` `` $sbdb^)? attr-dict `:` type($lhs) `,` type($rhs)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lns_LinearOp : Lns_Op<"linear"> {
  let summary = "`add(matmul(x, Wᵀ), b)`: bias added once, after the dot product";
  let description = [{
    `x[..., K]`, `weight[N, K]`, optional `bias[N]`; weight and bias may be in
    other bases (converted to x's base, the result's base).

    ```mlir
    %y = lns.linear %x, %w bias %b : tensor<4x17x!lns.num<f = 10>>,
           tensor<8x17x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>>
           -> tensor<4x8x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_RankedTensor:$input, Lns_RankedTensor:$weight,
                   Optional<Lns_RankedTensor>:$bias,
                   DefaultValuedAttr<Lns_SbdbModeAttr,
                                     "SbdbMode::ideal">:$sbdb);
  let results = (outs Lns_RankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`sbdb` `` $sbdb^)? attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

include "Lns/IR/LnsNetworkOps.td"

#endif // LAMINA_LNS_OPS_TD
