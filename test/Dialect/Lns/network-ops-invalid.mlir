// RUN: lamina-opt %s -split-input-file -verify-diagnostics

// The verifiers of the lns network ops (LnsNetworkOps.cpp): softmax's and
// log_softmax's dimension, nll_loss's and nll_loss_grad's shapes and types,
// and conv2d's ranks, attributes, types and output shape. One error path a
// case, with the verifier's own message.

!f = !lns.num<f = 23>
func.func @softmax_dim(%x: tensor<4x10x!f>) -> tensor<4x10x!f> {
  // expected-error @+1 {{'lns.softmax' op dimension 2 is out of range for an input of rank 2}}
  %0 = lns.softmax %x dim 2 : tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @log_softmax_negative_dim(%x: tensor<4x10x!f>) -> tensor<4x10x!f> {
  // expected-error @+1 {{'lns.log_softmax' op dimension -1 is out of range for an input of rank 2}}
  %0 = lns.log_softmax %x dim -1 : tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @nll_rank(%x: tensor<2x4x10x!f>, %t: tensor<2xi64>) -> tensor<!f> {
  // expected-error @+1 {{'lns.nll_loss' op takes log-probabilities of rank 2 [batch, classes], got 'tensor<2x4x10x!lns.num<f = 23>>'}}
  %0 = lns.nll_loss %x, %t reduction mean : tensor<2x4x10x!f>, tensor<2xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// -----

!f = !lns.num<f = 23>
func.func @nll_target_size(%x: tensor<4x10x!f>, %t: tensor<5xi64>) -> tensor<!f> {
  // expected-error @+1 {{'lns.nll_loss' op takes one class index per sample: a target of shape [4], got 'tensor<5xi64>'}}
  %0 = lns.nll_loss %x, %t reduction mean : tensor<4x10x!f>, tensor<5xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// -----

!f = !lns.num<f = 23>
func.func @nll_target_rank(%x: tensor<4x10x!f>, %t: tensor<4x1xi64>) -> tensor<!f> {
  // expected-error @+1 {{'lns.nll_loss' op takes one class index per sample: a target of shape [4], got 'tensor<4x1xi64>'}}
  %0 = lns.nll_loss %x, %t reduction sum : tensor<4x10x!f>, tensor<4x1xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// -----

func.func @nll_element_type(%x: tensor<4x10x!lns.num<f = 23>>, %t: tensor<4xi64>) -> tensor<!lns.num<f = 10>> {
  // expected-error @+1 {{'lns.nll_loss' op loss and log-probabilities must share one LNS type, got '!lns.num<f = 10>' and '!lns.num<f = 23>'}}
  %0 = lns.nll_loss %x, %t reduction mean : tensor<4x10x!lns.num<f = 23>>, tensor<4xi64> -> tensor<!lns.num<f = 10>>
  return %0 : tensor<!lns.num<f = 10>>
}

// -----

!f = !lns.num<f = 23>
func.func @nll_mean_shape(%x: tensor<4x10x!f>, %t: tensor<4xi64>) -> tensor<4x!f> {
  // expected-error @+1 {{'lns.nll_loss' op reduction 'mean' gives a loss of shape [], got 'tensor<4x!lns.num<f = 23>>'}}
  %0 = lns.nll_loss %x, %t reduction mean : tensor<4x10x!f>, tensor<4xi64> -> tensor<4x!f>
  return %0 : tensor<4x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @nll_none_shape(%x: tensor<4x10x!f>, %t: tensor<4xi64>) -> tensor<!f> {
  // expected-error @+1 {{'lns.nll_loss' op reduction 'none' gives a loss of shape [4], got 'tensor<!lns.num<f = 23>>'}}
  %0 = lns.nll_loss %x, %t reduction none : tensor<4x10x!f>, tensor<4xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// -----

// nll_loss_grad shares the checks, its gradient in the loss's place: the
// per-sample gradient of 'none' is [B].
!f = !lns.num<f = 23>
func.func @nll_grad_shape(%g: tensor<!f>, %t: tensor<4xi64>) -> tensor<4x10x!f> {
  // expected-error @+1 {{'lns.nll_loss_grad' op reduction 'none' gives a loss of shape [4], got 'tensor<!lns.num<f = 23>>'}}
  %0 = lns.nll_loss_grad %g, %t reduction none : tensor<!f>, tensor<4xi64> -> tensor<4x10x!f>
  return %0 : tensor<4x10x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_rank(%x: tensor<1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<1x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op takes an input [N, C, H, W] and a weight [F, C, KH, KW], got 'tensor<1x8x8x!lns.num<f = 23>>' and 'tensor<4x1x3x3x!lns.num<f = 23>>'}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<1x4x6x6x!f>
  return %0 : tensor<1x4x6x6x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_dynamic(%x: tensor<?x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<?x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op needs static shapes}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<?x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<?x4x6x6x!f>
  return %0 : tensor<?x4x6x6x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_strides_length(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op strides needs 2 values, got 3}}
  %0 = lns.conv2d %x, %w strides [1, 1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_pad_high_length(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op pad_high needs 2 values, got 1}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_zero_stride(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op strides must be positive, got [1, 0]}}
  %0 = lns.conv2d %x, %w strides [1, 0] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_negative_dilation(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op dilations must be positive, got [-1, 1]}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [-1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_negative_padding(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op pad_low must be non-negative, got [0, -1]}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, -1] pad_high [0, 0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

func.func @conv_weight_type(%x: tensor<2x1x8x8x!lns.num<f = 23>>, %w: tensor<4x1x3x3x!lns.num<f = 10>>) -> tensor<2x4x6x6x!lns.num<f = 23>> {
  // expected-error @+1 {{'lns.conv2d' op weight must have the input's LNS type '!lns.num<f = 23>', got '!lns.num<f = 10>'}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!lns.num<f = 23>>, tensor<4x1x3x3x!lns.num<f = 10>> -> tensor<2x4x6x6x!lns.num<f = 23>>
  return %0 : tensor<2x4x6x6x!lns.num<f = 23>>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_channels(%x: tensor<2x3x8x8x!f>, %w: tensor<4x2x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op weight has 2 input channels, the input 3}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x3x8x8x!f>, tensor<4x2x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

// The bias's expected type is printed with its element type quoted, as the
// verifier streams it: tensor<4x'!lns.num<f = 23>'>.
!f = !lns.num<f = 23>
func.func @conv_bias_size(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>, %b: tensor<3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op bias must be 'tensor<4x!lns.num<f = 23>>', got 'tensor<3x!lns.num<f = 23>>'}}
  %0 = lns.conv2d %x, %w bias %b strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f>, tensor<3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

func.func @conv_bias_type(%x: tensor<2x1x8x8x!lns.num<f = 23>>, %w: tensor<4x1x3x3x!lns.num<f = 23>>, %b: tensor<4x!lns.num<f = 10>>) -> tensor<2x4x6x6x!lns.num<f = 23>> {
  // expected-error @+1 {{'lns.conv2d' op bias must be 'tensor<4x!lns.num<f = 23>>', got 'tensor<4x!lns.num<f = 10>>'}}
  %0 = lns.conv2d %x, %w bias %b strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!lns.num<f = 23>>, tensor<4x1x3x3x!lns.num<f = 23>>, tensor<4x!lns.num<f = 10>> -> tensor<2x4x6x6x!lns.num<f = 23>>
  return %0 : tensor<2x4x6x6x!lns.num<f = 23>>
}

// -----

// A 3x3 kernel dilated by 3 reaches 3·2 + 1 = 7 rows; H is 4 + 1 + 1 = 6
// padded.
!f = !lns.num<f = 23>
func.func @conv_reach(%x: tensor<2x1x4x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x1x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op kernel reach 7 exceeds the padded input size 6 in spatial dimension 0}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [3, 1] pad_low [1, 0] pad_high [1, 0] : tensor<2x1x4x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x1x6x!f>
  return %0 : tensor<2x4x1x6x!f>
}

// -----

// Stride 2 in H: (8 − 3) / 2 + 1 = 3 rows, not 6.
!f = !lns.num<f = 23>
func.func @conv_result(%x: tensor<2x1x8x8x!f>, %w: tensor<4x1x3x3x!f>) -> tensor<2x4x6x6x!f> {
  // expected-error @+1 {{'lns.conv2d' op result must be 'tensor<2x4x3x6x!lns.num<f = 23>>', got 'tensor<2x4x6x6x!lns.num<f = 23>>'}}
  %0 = lns.conv2d %x, %w strides [2, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!f>, tensor<4x1x3x3x!f> -> tensor<2x4x6x6x!f>
  return %0 : tensor<2x4x6x6x!f>
}

// -----

func.func @conv_result_type(%x: tensor<2x1x8x8x!lns.num<f = 23>>, %w: tensor<4x1x3x3x!lns.num<f = 23>>) -> tensor<2x4x6x6x!lns.num<f = 10>> {
  // expected-error @+1 {{'lns.conv2d' op result must be 'tensor<2x4x6x6x!lns.num<f = 23>>', got 'tensor<2x4x6x6x!lns.num<f = 10>>'}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<2x1x8x8x!lns.num<f = 23>>, tensor<4x1x3x3x!lns.num<f = 23>> -> tensor<2x4x6x6x!lns.num<f = 10>>
  return %0 : tensor<2x4x6x6x!lns.num<f = 10>>
}

// -----

// The expansions build static shapes: dynamic ones are refused up front.
!f = !lns.num<f = 23>
func.func @softmax_dynamic(%x: tensor<?x10x!f>) -> tensor<?x10x!f> {
  // expected-error @+1 {{'lns.softmax' op needs static shapes, got 'tensor<?x10x!lns.num<f = 23>>'}}
  %0 = lns.softmax %x dim 1 : tensor<?x10x!f>
  return %0 : tensor<?x10x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @nll_dynamic(%x: tensor<?x10x!f>, %t: tensor<?xi64>) -> tensor<!f> {
  // expected-error @+1 {{'lns.nll_loss' op needs static shapes, got 'tensor<?x10x!lns.num<f = 23>>'}}
  %0 = lns.nll_loss %x, %t reduction mean : tensor<?x10x!f>, tensor<?xi64> -> tensor<!f>
  return %0 : tensor<!f>
}

// -----

// Every sum of an expansion has a first term.
!f = !lns.num<f = 23>
func.func @log_softmax_empty(%x: tensor<4x0x!f>) -> tensor<4x0x!f> {
  // expected-error @+1 {{'lns.log_softmax' op needs non-empty shapes, got 'tensor<4x0x!lns.num<f = 23>>'}}
  %0 = lns.log_softmax %x dim 1 : tensor<4x0x!f>
  return %0 : tensor<4x0x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_no_filters(%x: tensor<1x1x4x4x!f>, %w: tensor<0x1x3x3x!f>) -> tensor<1x0x2x2x!f> {
  // expected-error @+1 {{'lns.conv2d' op needs non-empty shapes, got 'tensor<0x1x3x3x!lns.num<f = 23>>'}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [1, 1] pad_low [0, 0] pad_high [0, 0] : tensor<1x1x4x4x!f>, tensor<0x1x3x3x!f> -> tensor<1x0x2x2x!f>
  return %0 : tensor<1x0x2x2x!f>
}

// -----

!f = !lns.num<f = 23>
func.func @conv_huge_dilation(%x: tensor<1x1x4x4x!f>, %w: tensor<1x1x3x3x!f>) -> tensor<1x1x2x2x!f> {
  // expected-error @+1 {{'lns.conv2d' op padded size or kernel reach overflows 64 bits in spatial dimension 0}}
  %0 = lns.conv2d %x, %w strides [1, 1] dilations [9223372036854775807, 1] pad_low [0, 0] pad_high [0, 0] : tensor<1x1x4x4x!f>, tensor<1x1x3x3x!f> -> tensor<1x1x2x2x!f>
  return %0 : tensor<1x1x2x2x!f>
}
