// What --target=cuda rejects before building anything (no toolkit needed).
//
// RUN: not lamina-run %s --target=cuda --entry=missing --random-inputs 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not lamina-run %s --target=cuda --entry=scalar --random-inputs 2>&1 | FileCheck %s --check-prefix=SCALAR
// RUN: not lamina-run %s --target=cuda --entry=dynamic --random-inputs 2>&1 | FileCheck %s --check-prefix=DYNAMIC

// ENTRY: lamina-run: error: no function @missing in the module
// SCALAR: lamina-run: error: result 1 is a scalar; entry functions return tensors
// DYNAMIC: lamina-run: error: argument 0 of type tensor<?x64xbf16>: only static shapes can be called from the host

func.func @scalar(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>, %seed: i64) -> (tensor<16x64xbf16>, i64) {
  %y = lamina.linear "fc" %x, %w : (tensor<16x64xbf16>, tensor<64x64xbf16>) -> tensor<16x64xbf16>
  return %y, %seed : tensor<16x64xbf16>, i64
}

func.func @dynamic(%x: tensor<?x64xbf16>, %w: tensor<64x64xbf16>) -> tensor<?x64xbf16> {
  %y = lamina.linear "fc" %x, %w : (tensor<?x64xbf16>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
