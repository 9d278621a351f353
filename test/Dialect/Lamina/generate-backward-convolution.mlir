// RUN: lamina-opt %s --lamina-generate-backward=function=loss | FileCheck %s

// The reverse-mode rules of a convolution as the importer writes
// nn.Conv2d (ConvolutionRules.cpp): the input zero-padded (low 1 row, high
// 1 column), the bias broadcast into the init, strides (3, 2), dilations
// (2, 1). The padded input is saved. dy (g) is
//   - spread by the strides into zeros (insert_slice, strides [1, 1, 3, 2]),
//   - padded by the kernel's dilated reach, (2 − 1)·2 rows and (2 − 1)·1
//     column on each side,
//   - contracted with the kernel turned by 180 degrees: dx of the padded
//     input, whose interior is the input's (extract_slice at the low pad);
// dW contracts the saved padded input's windows with g; the bias sums g
// over n, oh, ow.

// CHECK-DAG: #[[TURN:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 1, -d3 + 1)>
// CHECK-DAG: #[[ZWIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5 * 2, d3 + d6)>
// CHECK-DAG: #[[WTURNED:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d5, d6)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[XWIN:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d5 * 3 + d2 * 2, d6 * 2 + d3)>
// CHECK-DAG: #[[DY:.+]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0, d5, d6)>

// CHECK-LABEL: func.func @loss_forward
// CHECK: %[[P:.+]] = tensor.pad
// CHECK: return %{{.+}}, %[[P]] : tensor<f32>, tensor<1x2x6x6xf32>

// CHECK-LABEL: func.func @loss_backward
// CHECK-SAME: %[[W:[^:]+]]: tensor<3x2x2x2xf32>, %{{[^:]+}}: tensor<3xf32>, %[[XP:[^:]+]]: tensor<1x2x6x6xf32>
// CHECK: %[[G:.+]] = linalg.broadcast
// CHECK: %[[SPREAD:.+]] = tensor.insert_slice %[[G]] into %{{.+}}[0, 0, 0, 0] [1, 3, 2, 3] [1, 1, 3, 2] : tensor<1x3x2x3xf32> into tensor<1x3x4x5xf32>
// CHECK: %[[Z:.+]] = tensor.pad %[[SPREAD]] low[0, 0, 2, 1] high[0, 0, 2, 1]
// CHECK: } : tensor<1x3x4x5xf32> to tensor<1x3x8x7xf32>
// CHECK: %[[TURNED:.+]] = linalg.generic {indexing_maps = [#[[TURN]], #{{.+}}], {{.*}}} ins(%[[W]] : tensor<3x2x2x2xf32>)
// CHECK: %[[DXP:.+]] = linalg.generic {indexing_maps = [#[[ZWIN]], #[[WTURNED]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[Z]], %[[TURNED]] : {{.*}}) outs(%{{.+}} : tensor<1x2x6x6xf32>)
// CHECK: %[[DW:.+]] = linalg.generic {indexing_maps = [#[[XWIN]], #[[DY]], #[[OUT]]], {{.*}}} ins(%[[XP]], %[[G]] : {{.*}}) outs(%{{.+}} : tensor<3x2x2x2xf32>)
// CHECK: %[[DB:.+]] = linalg.reduce ins(%[[G]] : tensor<1x3x2x3xf32>) {{.*}} dimensions = [0, 2, 3]
// CHECK: %[[DX:.+]] = tensor.extract_slice %[[DXP]][0, 0, 1, 0] [1, 2, 5, 5] [1, 1, 1, 1] : tensor<1x2x6x6xf32> to tensor<1x2x5x5xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @loss(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x2x2xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 0] high[0, 0, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x2x5x5xf32> to tensor<1x2x6x6xf32>
  %e = tensor.empty() : tensor<1x3x2x3xf32>
  %init = linalg.broadcast ins(%b : tensor<3xf32>) outs(%e : tensor<1x3x2x3xf32>) dimensions = [0, 2, 3]
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<[3, 2]> : tensor<2xi64>} ins(%p, %w : tensor<1x2x6x6xf32>, tensor<3x2x2x2xf32>) outs(%init : tensor<1x3x2x3xf32>) -> tensor<1x3x2x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%y : tensor<1x3x2x3xf32>) outs(%s0 : tensor<f32>) dimensions = [0, 1, 2, 3]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  return %s : tensor<f32>
}
