//===- LnsNetworkOps.td - Activations, losses, convolutions -*- tablegen -*-===//
//
// The ops of a small LNS network beyond linear layers, each with the
// xlnstorch reference's formula. Functions the reference evaluates in
// floating point (exp's scaling, log, tanh, sigmoid) are element-wise and
// lowered by convert-lns-to-arith; the composite ops (softmax, log_softmax,
// nll_loss, conv2d) are expanded into lns arithmetic, linalg and tensor ops
// by lns-decompose, in the order of additions the reference uses.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_LNS_NETWORK_OPS_TD
#define LAMINA_LNS_NETWORK_OPS_TD

//===----------------------------------------------------------------------===//
// Functions through the float value
//===----------------------------------------------------------------------===//

class Lns_FloatFunctionOp<string mnemonic>
    : Lns_Op<mnemonic, [SameOperandsAndResultType]> {
  let arguments = (ins Lns_NumOrTensor:$input);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Lns_ExpOp : Lns_FloatFunctionOp<"exp"> {
  let summary = "e^x as the reference's power of e's code";
  let description = [{
    `trunc(c_e · decode(x)) & -2` in double, where `c_e` is the code of the
    reference's e (`torch.exp(torch.tensor(1.0))`, a float32 value) in the
    operand's base: the exponent of e scaled by x, truncated toward zero,
    sign bit clear. Exponents beyond ±2^52 (an overflow, which the Python
    path raises for) saturate to the largest code of that sign.

    ```mlir
    %y = lns.exp %x : tensor<4x10x!lns.num<f = 23>>
    ```
  }];
}

def Lns_LogOp : Lns_FloatFunctionOp<"log"> {
  let summary = "natural logarithm through the float value";
  let description = [{
    `encode(log(decode(x)))`. The log of zero (-inf) encodes as the largest
    negative code and of a negative value (NaN) as `Z`, as lns.encode does;
    the Python path raises for both.

    ```mlir
    %y = lns.log %x : tensor<4x!lns.num<f = 23>>
    ```
  }];
}

def Lns_TanhOp : Lns_FloatFunctionOp<"tanh"> {
  let summary = "hyperbolic tangent through the float value";
  let description = [{
    `encode(tanh(decode(x)))` in double.

    ```mlir
    %y = lns.tanh %x : tensor<4x!lns.num<f = 23>>
    ```
  }];
}

def Lns_SigmoidOp : Lns_FloatFunctionOp<"sigmoid"> {
  let summary = "logistic sigmoid through the float value";
  let description = [{
    `encode(1 / (1 + exp(-decode(x))))` in double.

    ```mlir
    %y = lns.sigmoid %x : tensor<4x!lns.num<f = 23>>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Leaky rectifier
//===----------------------------------------------------------------------===//

def Lns_LeakyReluOp : Lns_Op<"leaky_relu", [SameOperandsAndResultType]> {
  let summary = "`(x & 1) ? mul(x, slope) : x`, element-wise";
  let description = [{
    A code with the sign bit set (`Z` included) is multiplied by the slope
    of its position; the others are kept bit for bit. The slope has the
    input's type (a broadcast constant for `F.leaky_relu`) and takes no
    gradient.

    ```mlir
    %y = lns.leaky_relu %x, %slope : tensor<8x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$input, Lns_NumOrTensor:$slope);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$input `,` $slope attr-dict `:` type($input)";
}

def Lns_LeakyReluGradOp
    : Lns_Op<"leaky_relu_grad", [SameOperandsAndResultType]> {
  let summary = "the leaky rectifier's backward: "
                "`mul(g, (x & 1) || isZero(x) ? slope : c1)`";
  let description = [{
    The gradient of the input from the upstream gradient `g`, the forward's
    input `x` and its slope.

    ```mlir
    %gx = lns.leaky_relu_grad %g, %x, %slope : tensor<8x!lns.num<f = 10>>
    ```
  }];
  let arguments = (ins Lns_NumOrTensor:$grad, Lns_NumOrTensor:$input,
                   Lns_NumOrTensor:$slope);
  let results = (outs Lns_NumOrTensor:$result);
  let assemblyFormat = "$grad `,` $input `,` $slope attr-dict `:` type($grad)";
}

//===----------------------------------------------------------------------===//
// Normalizations and the negative log-likelihood
//===----------------------------------------------------------------------===//

class Lns_NormalizationOp<string mnemonic>
    : Lns_Op<mnemonic, [SameOperandsAndResultType]> {
  let arguments = (ins Lns_RankedTensor:$input, I64Attr:$dim);
  let results = (outs Lns_RankedTensor:$result);
  let assemblyFormat = "$input `dim` $dim attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Lns_SoftmaxOp : Lns_NormalizationOp<"softmax"> {
  let summary = "`div(exp(x), sum(exp(x)))` over one dimension";
  let description = [{
    The sum is lns.sum's sequential sum over `dim`, broadcast back.

    ```mlir
    %p = lns.softmax %x dim 1 : tensor<4x10x!lns.num<f = 23>>
    ```
  }];
}

def Lns_LogSoftmaxOp : Lns_NormalizationOp<"log_softmax"> {
  let summary = "`sub(x, log(sum(exp(x))))` over one dimension";
  let description = [{
    ```mlir
    %l = lns.log_softmax %x dim 1 : tensor<4x10x!lns.num<f = 23>>
    ```
  }];
}

def Lns_NllLossOp : Lns_Op<"nll_loss"> {
  let summary = "negative log-likelihood of class indices";
  let description = [{
    `input[B, C]` holds log-probabilities, `target[B]` class indices. Sample
    `i` contributes `neg(input[i, target[i]])`, or `Z` where `target[i]` is
    `ignore_index`. `none` returns the B terms; `sum` their sequential sum;
    `mean` that sum divided by the code of the number of samples kept
    (encoded as lns.encode does).

    ```mlir
    %l = lns.nll_loss %x, %t reduction mean : tensor<4x10x!lns.num<f = 23>>,
           tensor<4xi64> -> tensor<!lns.num<f = 23>>
    ```
  }];
  let arguments = (ins Lns_RankedTensor:$input, TensorOf<[I64]>:$target,
                   Lns_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Lns_RankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $target `reduction` `` $reduction attr-dict `:` type($input) `,`
    type($target) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Lns_NllLossGradOp : Lns_Op<"nll_loss_grad"> {
  let summary = "the negative log-likelihood's backward";
  let description = [{
    The gradient of nll_loss's input: at `[i, target[i]]` of a kept sample
    `mul(s, g_i)` with `s = cm1` (`div(cm1, divisor)` for `mean`, the
    forward's divisor) and `g_i` the upstream gradient (per sample for
    `none`); `Z` everywhere else.

    ```mlir
    %gx = lns.nll_loss_grad %g, %t reduction mean : tensor<!lns.num<f = 23>>,
            tensor<4xi64> -> tensor<4x10x!lns.num<f = 23>>
    ```
  }];
  let arguments = (ins Lns_RankedTensor:$grad, TensorOf<[I64]>:$target,
                   Lns_LossReductionAttr:$reduction,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Lns_RankedTensor:$result);
  let assemblyFormat = [{
    $grad `,` $target `reduction` `` $reduction attr-dict `:` type($grad) `,`
    type($target) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

def Lns_Conv2DOp : Lns_Op<"conv2d"> {
  let summary = "2-D convolution, one sequential sum per output";
  let description = [{
    `input[N, C, H, W]`, `weight[F, C, KH, KW]`, optional `bias[F]`, one
    group. The input is padded with `Z` (`pad_low` before, `pad_high` after
    each spatial dimension); output `[n, f, oh, ow]` is the sequential sum
    over `c`, then `kh`, then `kw` of
    `mul(x[n, c, oh·sh + kh·dh, ow·sw + kw·dw], w[f, c, kh, kw])`, with the
    bias added after it — the reference's order.

    ```mlir
    %y = lns.conv2d %x, %w bias %b strides [1, 1] dilations [1, 1]
           pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!lns.num<f = 23>>,
           tensor<4x1x3x3x!lns.num<f = 23>>, tensor<4x!lns.num<f = 23>>
           -> tensor<2x4x6x6x!lns.num<f = 23>>
    ```
  }];
  let arguments = (ins Lns_RankedTensor:$input, Lns_RankedTensor:$weight,
                   Optional<Lns_RankedTensor>:$bias,
                   DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$dilations,
                   DenseI64ArrayAttr:$pad_low, DenseI64ArrayAttr:$pad_high);
  let results = (outs Lns_RankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? `strides` $strides `dilations`
    $dilations `pad_low` $pad_low `pad_high` $pad_high attr-dict `:`
    type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // LAMINA_LNS_NETWORK_OPS_TD
