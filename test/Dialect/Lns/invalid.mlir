// RUN: lamina-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{LNS type takes either 'f' or 'b', not both}}
func.func private @both(!lns.num<f = 10, b = 2.0>)

// -----

// expected-error @+1 {{LNS base must be a finite number greater than 1, got 1.0}}
func.func private @base_one(!lns.num<b = 1.0>)

// -----

// expected-error @+1 {{LNS base must be a finite number greater than 1, got 0.5}}
func.func private @base_below_one(!lns.num<b = 0.5>)

// -----

// expected-error @+1 {{LNS type with f = 53 has a base that rounds to 1.0 in double; f must be at most 52}}
func.func private @too_many_bits(!lns.num<f = 53>)

// -----

// expected-error @+1 {{unknown LNS type parameter 'e', expected 'f' (fractional bits) or 'b' (base)}}
func.func private @unknown_parameter(!lns.num<e = 3>)

// -----

// expected-error @+2 {{unexpected decimal integer literal for a floating point value}}
// expected-note @+1 {{add a trailing dot to make the literal a float}}
func.func private @integer_base(!lns.num<b = 2>)

// -----

func.func @scalar_constant() -> !lns.num<f = 10> {
  // expected-error @+1 {{scalar LNS constant needs an i64 code, got 1 : i32}}
  %0 = lns.constant 1 : i32 -> !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

func.func @constant_shape() -> tensor<3x!lns.num<f = 10>> {
  // expected-error @+1 {{codes of shape 'tensor<2xi64>' do not match the result type 'tensor<3x!lns.num<f = 10>>'}}
  %0 = lns.constant dense<[1, 2]> : tensor<2xi64> -> tensor<3x!lns.num<f = 10>>
  return %0 : tensor<3x!lns.num<f = 10>>
}

// -----

func.func @constant_not_codes() -> tensor<2x!lns.num<f = 10>> {
  // expected-error @+1 {{LNS tensor constant needs dense i64 codes, got dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf64>}}
  %0 = lns.constant dense<[1.0, 2.0]> : tensor<2xf64> -> tensor<2x!lns.num<f = 10>>
  return %0 : tensor<2x!lns.num<f = 10>>
}

// -----

func.func @encode_integer(%x: tensor<4xi32>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{operand #0 must be floating-point or tensor of floating-point values}}
  %0 = lns.encode %x : tensor<4xi32> -> tensor<4x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @shape_mismatch(%a: tensor<4x!lns.num<f = 10>>, %b: tensor<5x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{operands must have the same shape, got 'tensor<4x!lns.num<f = 10>>' and 'tensor<5x!lns.num<f = 10>>'}}
  %0 = lns.mul %a, %b : tensor<4x!lns.num<f = 10>>, tensor<5x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @scalar_and_tensor(%a: !lns.num<f = 10>, %b: tensor<5x!lns.num<f = 10>>) -> !lns.num<f = 10> {
  // expected-error @+1 {{operands must have the same shape}}
  %0 = lns.add %a, %b : !lns.num<f = 10>, tensor<5x!lns.num<f = 10>>
  return %0 : !lns.num<f = 10>
}

// -----

func.func @divide_by_zero(%a: tensor<2x!lns.num<f = 10>>) -> tensor<2x!lns.num<f = 10>> {
  // Both zero codes are zeros: -2^53 | 1 and -2^53.
  %z = lns.constant dense<[4, -9007199254740992]> : tensor<2xi64> -> tensor<2x!lns.num<f = 10>>
  // expected-error @+1 {{divides by an LNS zero (divisor element 1)}}
  %0 = lns.div %a, %z : tensor<2x!lns.num<f = 10>>, tensor<2x!lns.num<f = 10>>
  return %0 : tensor<2x!lns.num<f = 10>>
}

// -----

func.func @divide_by_scalar_zero(%a: !lns.num<f = 10>) -> !lns.num<f = 10> {
  %z = lns.constant -9007199254740991 : i64 -> !lns.num<f = 10>
  // expected-error @+1 {{divides by an LNS zero}}
  %0 = lns.div %a, %z : !lns.num<f = 10>, !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

func.func @table_too_wide(%a: !lns.num<f = 23>, %b: !lns.num<f = 23>) -> !lns.num<f = 23> {
  // expected-error @+1 {{sbdb mode 'table' is defined for f <= 16, but the result type has f = 23; use 'ideal'}}
  %0 = lns.add %a, %b sbdb table : !lns.num<f = 23>, !lns.num<f = 23>
  return %0 : !lns.num<f = 23>
}

// -----

func.func @table_explicit_base(%a: !lns.num<b = 1.5>, %b: !lns.num<b = 1.5>) -> !lns.num<b = 1.5> {
  // expected-error @+1 {{sbdb mode 'table' needs a base given by 'f'; '!lns.num<b = 1.5>' has an explicit base}}
  %0 = lns.sub %a, %b sbdb table : !lns.num<b = 1.5>, !lns.num<b = 1.5>
  return %0 : !lns.num<b = 1.5>
}

// -----

func.func @unknown_sbdb(%a: !lns.num<f = 10>, %b: !lns.num<f = 10>) -> !lns.num<f = 10> {
  // expected-error @+2 {{expected ::mlir::lamina::lns::SbdbMode to be one of: ideal, table}}
  // expected-error @+1 {{failed to parse Lns_SbdbModeAttr parameter 'value'}}
  %0 = lns.add %a, %b sbdb mitchell : !lns.num<f = 10>, !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

func.func @sum_no_dims(%x: tensor<4x8x!lns.num<f = 10>>) -> tensor<4x8x!lns.num<f = 10>> {
  // expected-error @+1 {{needs at least one dimension to reduce}}
  %0 = lns.sum %x dims [] : tensor<4x8x!lns.num<f = 10>> -> tensor<4x8x!lns.num<f = 10>>
  return %0 : tensor<4x8x!lns.num<f = 10>>
}

// -----

func.func @sum_dim_range(%x: tensor<4x8x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{reduction dimension 2 is out of range for an input of rank 2}}
  %0 = lns.sum %x dims [2] : tensor<4x8x!lns.num<f = 10>> -> tensor<4x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @sum_dim_twice(%x: tensor<4x8x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{reduction dimension 1 appears twice}}
  %0 = lns.sum %x dims [1, 1] : tensor<4x8x!lns.num<f = 10>> -> tensor<4x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @sum_empty(%x: tensor<4x0x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{reduces the empty dimension 1, which has no first term}}
  %0 = lns.sum %x dims [1] : tensor<4x0x!lns.num<f = 10>> -> tensor<4x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @sum_result_shape(%x: tensor<4x8x!lns.num<f = 10>>) -> tensor<8x!lns.num<f = 10>> {
  // expected-error @+1 {{result type 'tensor<8x!lns.num<f = 10>>' does not match the input shape with dims [1] removed}}
  %0 = lns.sum %x dims [1] : tensor<4x8x!lns.num<f = 10>> -> tensor<8x!lns.num<f = 10>>
  return %0 : tensor<8x!lns.num<f = 10>>
}

// -----

func.func @sum_scalar_partial(%x: tensor<4x8x!lns.num<f = 10>>) -> !lns.num<f = 10> {
  // expected-error @+1 {{scalar result needs every dimension reduced}}
  %0 = lns.sum %x dims [1] : tensor<4x8x!lns.num<f = 10>> -> !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

func.func @sum_base(%x: tensor<4x8x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 12>> {
  // expected-error @+1 {{result element type '!lns.num<f = 12>' must equal the input element type '!lns.num<f = 10>'}}
  %0 = lns.sum %x dims [1] : tensor<4x8x!lns.num<f = 10>> -> tensor<4x!lns.num<f = 12>>
  return %0 : tensor<4x!lns.num<f = 12>>
}

// -----

func.func @matmul_rank(%a: tensor<8x!lns.num<f = 10>>, %b: tensor<8x3x!lns.num<f = 10>>) -> tensor<3x!lns.num<f = 10>> {
  // expected-error @+1 {{operands must have rank >= 2}}
  %0 = lns.matmul %a, %b : tensor<8x!lns.num<f = 10>>, tensor<8x3x!lns.num<f = 10>> -> tensor<3x!lns.num<f = 10>>
  return %0 : tensor<3x!lns.num<f = 10>>
}

// -----

func.func @matmul_k(%a: tensor<4x8x!lns.num<f = 10>>, %b: tensor<7x3x!lns.num<f = 10>>) -> tensor<4x3x!lns.num<f = 10>> {
  // expected-error @+1 {{contraction sizes differ: lhs has K = 8, rhs has K = 7}}
  %0 = lns.matmul %a, %b : tensor<4x8x!lns.num<f = 10>>, tensor<7x3x!lns.num<f = 10>> -> tensor<4x3x!lns.num<f = 10>>
  return %0 : tensor<4x3x!lns.num<f = 10>>
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8x!lns.num<f = 10>>, %b: tensor<3x8x3x!lns.num<f = 10>>) -> tensor<2x4x3x!lns.num<f = 10>> {
  // expected-error @+1 {{batch dimensions of 'tensor<2x4x8x!lns.num<f = 10>>' and 'tensor<3x8x3x!lns.num<f = 10>>' do not broadcast}}
  %0 = lns.matmul %a, %b : tensor<2x4x8x!lns.num<f = 10>>, tensor<3x8x3x!lns.num<f = 10>> -> tensor<2x4x3x!lns.num<f = 10>>
  return %0 : tensor<2x4x3x!lns.num<f = 10>>
}

// -----

func.func @matmul_result(%a: tensor<4x8x!lns.num<f = 10>>, %b: tensor<8x3x!lns.num<f = 10>>) -> tensor<4x4x!lns.num<f = 10>> {
  // expected-error @+1 {{result type 'tensor<4x4x!lns.num<f = 10>>' does not match the product shape [4, 3]}}
  %0 = lns.matmul %a, %b : tensor<4x8x!lns.num<f = 10>>, tensor<8x3x!lns.num<f = 10>> -> tensor<4x4x!lns.num<f = 10>>
  return %0 : tensor<4x4x!lns.num<f = 10>>
}

// -----

func.func @matmul_base(%a: tensor<4x8x!lns.num<f = 10>>, %b: tensor<8x3x!lns.num<f = 12>>) -> tensor<4x3x!lns.num<f = 12>> {
  // expected-error @+1 {{result must have the lhs's base '!lns.num<f = 10>', got '!lns.num<f = 12>'}}
  %0 = lns.matmul %a, %b : tensor<4x8x!lns.num<f = 10>>, tensor<8x3x!lns.num<f = 12>> -> tensor<4x3x!lns.num<f = 12>>
  return %0 : tensor<4x3x!lns.num<f = 12>>
}

// -----

func.func @linear_width(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<3x7x!lns.num<f = 10>>) -> tensor<4x3x!lns.num<f = 10>> {
  // expected-error @+1 {{input width 8 does not match the weight's in_features 7}}
  %0 = lns.linear %x, %w : tensor<4x8x!lns.num<f = 10>>, tensor<3x7x!lns.num<f = 10>> -> tensor<4x3x!lns.num<f = 10>>
  return %0 : tensor<4x3x!lns.num<f = 10>>
}

// -----

func.func @linear_weight_rank(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<8x!lns.num<f = 10>>) -> tensor<4x3x!lns.num<f = 10>> {
  // expected-error @+1 {{weight must be [out, in], got 'tensor<8x!lns.num<f = 10>>'}}
  %0 = lns.linear %x, %w : tensor<4x8x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>> -> tensor<4x3x!lns.num<f = 10>>
  return %0 : tensor<4x3x!lns.num<f = 10>>
}

// -----

func.func @linear_bias(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<3x8x!lns.num<f = 10>>, %b: tensor<4x!lns.num<f = 10>>) -> tensor<4x3x!lns.num<f = 10>> {
  // expected-error @+1 {{bias must be [3] to match the weight, got 'tensor<4x!lns.num<f = 10>>'}}
  %0 = lns.linear %x, %w bias %b : tensor<4x8x!lns.num<f = 10>>, tensor<3x8x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>> -> tensor<4x3x!lns.num<f = 10>>
  return %0 : tensor<4x3x!lns.num<f = 10>>
}

// -----

func.func @linear_result(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<3x8x!lns.num<f = 10>>) -> tensor<4x4x!lns.num<f = 10>> {
  // expected-error @+1 {{result type 'tensor<4x4x!lns.num<f = 10>>' does not match [..., out] = [4, 3]}}
  %0 = lns.linear %x, %w : tensor<4x8x!lns.num<f = 10>>, tensor<3x8x!lns.num<f = 10>> -> tensor<4x4x!lns.num<f = 10>>
  return %0 : tensor<4x4x!lns.num<f = 10>>
}

// -----

func.func @linear_base(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<3x8x!lns.num<f = 12>>) -> tensor<4x3x!lns.num<f = 12>> {
  // expected-error @+1 {{result must have the input's base '!lns.num<f = 10>', got '!lns.num<f = 12>'}}
  %0 = lns.linear %x, %w : tensor<4x8x!lns.num<f = 10>>, tensor<3x8x!lns.num<f = 12>> -> tensor<4x3x!lns.num<f = 12>>
  return %0 : tensor<4x3x!lns.num<f = 12>>
}

// -----

func.func @linear_table(%x: tensor<4x8x!lns.num<f = 20>>, %w: tensor<3x8x!lns.num<f = 20>>) -> tensor<4x3x!lns.num<f = 20>> {
  // expected-error @+1 {{sbdb mode 'table' is defined for f <= 16, but the result type has f = 20; use 'ideal'}}
  %0 = lns.linear %x, %w sbdb table : tensor<4x8x!lns.num<f = 20>>, tensor<3x8x!lns.num<f = 20>> -> tensor<4x3x!lns.num<f = 20>>
  return %0 : tensor<4x3x!lns.num<f = 20>>
}

// -----

func.func @cmp_result_shape(%x: tensor<4x!lns.num<f = 10>>) -> tensor<3xi1> {
  // expected-error @+1 {{result 'tensor<3xi1>' must have the shape of the operands, 'tensor<4x!lns.num<f = 10>>'}}
  %0 = lns.cmp lt, %x, %x : tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 10>> -> tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

func.func @cmp_scalar_to_tensor(%x: !lns.num<f = 10>) -> tensor<1xi1> {
  // expected-error @+1 {{result 'tensor<1xi1>' must have the shape of the operands, '!lns.num<f = 10>'}}
  %0 = lns.cmp lt, %x, %x : !lns.num<f = 10>, !lns.num<f = 10> -> tensor<1xi1>
  return %0 : tensor<1xi1>
}

// -----

func.func @cmp_operand_shapes(%x: tensor<4x!lns.num<f = 10>>, %y: tensor<2x!lns.num<f = 10>>) -> tensor<4xi1> {
  // expected-error @+1 {{operands must have the same shape, got 'tensor<4x!lns.num<f = 10>>' and 'tensor<2x!lns.num<f = 10>>'}}
  %0 = lns.cmp ge, %x, %y : tensor<4x!lns.num<f = 10>>, tensor<2x!lns.num<f = 10>> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @cmp_predicate(%x: !lns.num<f = 10>) -> i1 {
  // expected-error @+2 {{expected ::mlir::lamina::lns::ComparePredicate to be one of: eq, ne, lt, le, gt, ge}}
  // expected-error @+1 {{failed to parse Lns_ComparePredicateAttr parameter 'value'}}
  %0 = lns.cmp above, %x, %x : !lns.num<f = 10>, !lns.num<f = 10> -> i1
  return %0 : i1
}

// -----

func.func @max_shapes(%x: tensor<4x!lns.num<f = 10>>, %y: tensor<2x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{operands must have the same shape}}
  %0 = lns.max %x, %y : tensor<4x!lns.num<f = 10>>, tensor<2x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @min_shapes(%x: tensor<4x!lns.num<f = 10>>, %y: tensor<2x!lns.num<f = 10>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{operands must have the same shape}}
  %0 = lns.min %x, %y : tensor<4x!lns.num<f = 10>>, tensor<2x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}

// -----

func.func @relu_grad_bases(%g: tensor<4x!lns.num<f = 10>>, %o: tensor<4x!lns.num<f = 12>>) -> tensor<4x!lns.num<f = 10>> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "lns.relu_grad"(%g, %o) : (tensor<4x!lns.num<f = 10>>, tensor<4x!lns.num<f = 12>>) -> tensor<4x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}
