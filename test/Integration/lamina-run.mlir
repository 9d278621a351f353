// Runs a layer end to end on seeded random data.
// RUN: lamina-run %s --random-inputs --seed=3 | FileCheck %s --check-prefix=OUT
// RUN: lamina-run %s --random-inputs --seed=3 --repeat=3 | FileCheck %s --check-prefix=TIME
// RUN: lamina-run %s --random-inputs --seed=3 --repeat=3 --repack --output-dir=%t/repacked | FileCheck %s --check-prefix=REPACK
// RUN: lamina-run %s --random-inputs --seed=3 --reference=%t/repacked/result0.npy --rtol=0 --atol=0 | FileCheck %s --check-prefix=SAME
// RUN: lamina-run %s --random-inputs --output-dir=%t && %python -c "import numpy as n; a = n.load('%t/result0.npy'); assert a.shape == (4, 16) and (a >= 0).all() and (a > 0).any()"

// Clear errors for bad invocations.
// RUN: not lamina-run %s --entry=nope 2>&1 | FileCheck %s --check-prefix=NOFUNC
// RUN: not lamina-run %s 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not lamina-run %s --input=%t/missing.npy 2>&1 | FileCheck %s --check-prefix=UNREADABLE
// RUN: not lamina-run %s --input=%t --random-inputs 2>&1 | FileCheck %s --check-prefix=DIRECTORY
// RUN: not lamina-run %s --input=%s --random-inputs 2>&1 | FileCheck %s --check-prefix=NOTNPY
// RUN: not lamina-run %s --random-inputs --repeat=4294967295 2>&1 | FileCheck %s --check-prefix=REPEAT
// RUN: %python -c "import struct; h = \"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8), }\".ljust(117) + '\\n'; open('%t/huge.npy', 'wb').write(b'\\x93NUMPY\\x01\\x00' + struct.pack('<H', len(h)) + h.encode() + bytes(16))"
// RUN: not lamina-run %s --input=%t/huge.npy --random-inputs 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// RUN: not lamina-run %s --input=%t/result0.npy --random-inputs 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not lamina-run %s --input=i64:3 --random-inputs 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not lamina-run %s --random-inputs --pipeline=no-such-pass 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not lamina-run %s --random-inputs --repeat=2 --repack --backward 2>&1 | FileCheck %s --check-prefix=REPACKBACKWARD
// RUN: not lamina-run %s --random-inputs --seed=5 --reference=%t/result0.npy 2>&1 | FileCheck %s --check-prefix=MISMATCH

// RUN: %python -c "import numpy as n; n.save('%t/x.npy', n.ones((4, 8), n.float64))"
// RUN: not lamina-run %s --input=%t/x.npy --random-inputs 2>&1 | FileCheck %s --check-prefix=DTYPE

// OUT: result 0: f32[4, 16] min 0 max
// TIME: time over 3 calls: median {{[0-9.]+}} ms, min {{[0-9.]+}} ms
// TIME-NEXT: weights packed 1 times
// Packed once to prepare, then in the warm-up call and each timed call.
// REPACK: time over 3 calls
// REPACK-NEXT: weights packed 5 times
// SAME: result 0 vs reference: max abs err 0, {{.*}}: ok
// REPACKBACKWARD: lamina-run: error: --repack is for runs without --backward
// NOFUNC: lamina-run: error: no function @nope in the module; it defines: @main
// COUNT: lamina-run: error: @main takes 3 arguments, 0 given (add --input, or --random-inputs)
// UNREADABLE: lamina-run: error: cannot read '{{.*}}missing.npy': No such file or directory
// SHAPE: lamina-run: error: input 0 must be tensor<4x8xf32>, got shape [4, 16]
// KIND: lamina-run: error: input 0 must be tensor<4x8xf32> (element f32), got element i64
// PIPELINE: lamina-run: error: bad pipeline 'no-such-pass'
// MISMATCH: result 0 vs reference: max abs err {{.*}} beyond atol 1e-06 + rtol 1e-05: MISMATCH
// DTYPE: lamina-run: error: input 0 must be tensor<4x8xf32> (element f32), got element f64

func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation relu : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// DIRECTORY: error: --input '{{.*}}' is a directory; inputs are .npy files or scalars (i64:<n>, ...)
// NOTNPY: error: --input '{{.*}}lamina-run.mlir' is not an .npy file; inputs are .npy files or scalars (i64:<n>, ...)
// REPEAT: error: --repeat=4294967295 is more than the 1000000 timed calls lamina-run keeps
// OVERFLOW: error: '{{.*}}huge.npy' has a header shape (4611686018427387904, 8) whose byte size does not fit in 64 bits
