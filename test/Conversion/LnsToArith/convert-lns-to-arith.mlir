// RUN: lamina-opt %s --convert-lns-to-arith --split-input-file | FileCheck %s

// Scalars: codes are i64 across the signature; mul is integer arithmetic
// with the zero rule (Z = -9007199254740991).
// CHECK-LABEL: func.func @mul
// CHECK-SAME: (%[[X:.+]]: i64, %[[Y:.+]]: i64) -> i64
func.func @mul(%x: !lns.num<f = 10>, %y: !lns.num<f = 10>) -> !lns.num<f = 10> {
  // CHECK: %[[S:.+]] = arith.andi %[[Y]], %{{.*}} : i64
  // CHECK: %[[SUM:.+]] = arith.addi %[[X]], %[[Y]] : i64
  // CHECK: %[[D:.+]] = arith.subi %[[SUM]], %[[S]] : i64
  // CHECK: %[[P:.+]] = arith.xori %[[D]], %[[S]] : i64
  // CHECK: arith.select %{{.*}}, %c-9007199254740991_i64{{.*}}, %[[P]] : i64
  // CHECK-NOT: lns.
  %0 = lns.mul %x, %y : !lns.num<f = 10>, !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

// Addition evaluates sbdb in double with pow and log, divides by log b
// (here f = 10: log(2^(2^-10)) = 6.7690377e-4) and rounds half to even.
// CHECK-LABEL: func.func @add
func.func @add(%x: tensor<8x!lns.num<f = 10>>, %y: tensor<8x!lns.num<f = 10>>) -> tensor<8x!lns.num<f = 10>> {
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8xi64>, tensor<8xi64>) outs(%{{.*}} : tensor<8xi64>)
  // CHECK: arith.minsi
  // CHECK: math.powf %{{.*}}, %{{.*}} : f64
  // CHECK: arith.addf
  // CHECK: math.absf
  // CHECK: math.log
  // CHECK: arith.divf %{{.*}}, %{{.*}} : f64
  // CHECK: math.roundeven
  // CHECK: arith.fptosi
  // CHECK: arith.maxsi
  %0 = lns.add %x, %y : tensor<8x!lns.num<f = 10>>, tensor<8x!lns.num<f = 10>>
  return %0 : tensor<8x!lns.num<f = 10>>
}

// -----

// ideal mode: per row of x, the terms k = 0..K-1 in order, then the bias,
// each step a sweep of vectors over the row's accumulators (buffers). sbdb
// comes from piecewise cubics (a constant table of 4-coefficient rows, each
// lane's row loaded as two halves, interleaved, three FMAs): no libm call
// in the sweep. A first pass over the row stores the terms, the lanes'
// table rows and their offsets in the segments; the second starts each
// vector with its table loads. Vectors with lanes the error bound cannot decide are
// appended to a pending list with those lanes and their previous sums, and
// the lanes recomputed with the exact formula (libm pow and log) after the
// sweep. Codes below 2^29 run on i32
// lanes (8 per vector; no sum of them leaves i32), larger codes on i64
// lanes (4 per vector).
// CHECK-LABEL: func.func @linear
func.func @linear(%x: tensor<4x17x!lns.num<f = 10>>, %w: tensor<6x17x!lns.num<f = 12>>, %b: tensor<6x!lns.num<f = 10>>) -> tensor<4x6x!lns.num<f = 10>> {
  // The f = 12 weight is converted to f = 10 once, element-wise.
  // CHECK: linalg.generic
  // CHECK: math.roundeven
  // CHECK: linalg.transpose ins(%{{.*}} : tensor<4x17xi64>) outs(%{{.*}} : tensor<17x4xi64>)
  // CHECK: linalg.transpose ins(%{{.*}} : tensor<6x17xi64>) outs(%{{.*}} : tensor<17x6xi64>)
  // CHECK: %[[ACC:.+]] = scf.if %{{.*}} -> (tensor<4x6xi64>) {
  // CHECK: tensor.pad %{{.*}} low[0, 0] high[0, 2]
  // CHECK: %[[TABLE:.+]] = bufferization.to_buffer %{{.*}} read_only : tensor<7680x4xf64> to memref<7680x4xf64>
  // CHECK: %[[SUMS:.+]] = memref.alloc() : memref<4x8xi32>
  // CHECK: %[[SAVED:.+]] = memref.alloc() : memref<8xi32>
  // CHECK: %[[PENDING:.+]] = memref.alloc() : memref<1xindex>
  // CHECK: %[[ROWS:.+]] = memref.alloc() : memref<8xi32>
  // CHECK: %[[TERMS:.+]] = memref.alloc() : memref<8xi32>
  // CHECK: %[[OFFSETS:.+]] = memref.alloc() : memref<8xf64>
  // CHECK: %[[LANES:.+]] = memref.alloc() : memref<1xi32>
  // Rows in blocks of four: each step k visits the block's rows in turn.
  // CHECK: scf.for %[[FIRST:.+]] = %{{.*}} to %{{.*}} step %c4
  // CHECK: scf.for %[[K:.+]] = %{{.*}} to %c17 step
  // CHECK: scf.for %[[ROW:.+]] = %[[FIRST]] to
  // Pass 1 over the row: terms, table rows, offsets in the segments.
  // CHECK: scf.for %[[COL1:.+]] = {{.*}} {
  // CHECK: vector.load %[[SUMS]][%[[ROW]], %[[COL1]]] : memref<4x8xi32>, vector<8xi32>
  // CHECK: vector.transfer_read %{{.*}}[%[[K]], %[[COL1]]]{{.*}} : tensor<17x8xi32>, vector<8xi32>
  // CHECK: vector.store %{{.*}}, %[[TERMS]][%[[COL1]]]
  // CHECK: vector.store %{{.*}}, %[[ROWS]][%[[COL1]]]
  // CHECK: vector.store %{{.*}}, %[[OFFSETS]][%[[COL1]]] : memref<8xf64>, vector<8xf64>
  // Pass 2: each vector starts with its table loads.
  // CHECK: %[[COUNT:.+]] = scf.for %[[COL:.+]] = {{.*}} iter_args(%[[N:.+]] = %{{.*}}) -> (index)
  // CHECK: %[[PREVIOUS:.+]] = vector.load %[[SUMS]][%[[ROW]], %[[COL]]] : memref<4x8xi32>, vector<8xi32>
  // CHECK: vector.load %[[TERMS]][%[[COL]]]
  // CHECK: vector.load %[[OFFSETS]][%[[COL]]]
  // CHECK-NOT: math.powf
  // CHECK-COUNT-4: memref.load %[[ROWS]]
  // CHECK-COUNT-8: vector.load %[[TABLE]][%{{.*}}, %{{.*}}] : memref<7680x4xf64>, vector<2xf64>
  // CHECK-COUNT-4: memref.load %[[ROWS]]
  // CHECK-COUNT-8: vector.load %[[TABLE]][%{{.*}}, %{{.*}}] : memref<7680x4xf64>, vector<2xf64>
  // CHECK: math.fma {{.*}} : vector<8xf64>
  // CHECK: math.fma {{.*}} : vector<8xf64>
  // CHECK: math.fma {{.*}} : vector<8xf64>
  // CHECK-NOT: math.log
  // One mask bit per lane within twice the bound of a .5 tie.
  // CHECK: vector.bitcast %{{.*}} : vector<4xi1> to vector<1xi4>
  // CHECK: arith.ori {{.*}} : i32
  // CHECK: vector.bitcast %{{.*}} : vector<4xi1> to vector<1xi4>
  // CHECK: %[[UNDECIDED:.+]] = arith.ori {{.*}} : i32
  // CHECK: vector.store %{{.*}}, %[[SUMS]][%[[ROW]], %[[COL]]]
  // CHECK: %[[ANY:.+]] = arith.cmpi ne, %[[UNDECIDED]]
  // CHECK: scf.if %[[ANY]] -> (index) {
  // CHECK: vector.store %[[PREVIOUS]], %[[SAVED]]
  // CHECK: memref.store %[[COL]], %[[PENDING]][%[[N]]]
  // CHECK: memref.store %[[UNDECIDED]], %[[LANES]][%[[N]]]
  // The undecided lanes of pending vectors, with the exact formula.
  // CHECK: scf.for %[[I:.+]] = %{{.*}} to %[[COUNT]] step
  // CHECK: %[[AT:.+]] = memref.load %[[PENDING]][%[[I]]]
  // CHECK: memref.load %[[LANES]][%[[I]]]
  // CHECK: scf.for %[[LANE:.+]] = %{{.*}} to %c8
  // CHECK: scf.if
  // CHECK: memref.load %[[SAVED]]
  // CHECK: math.powf {{.*}} : f64
  // CHECK: math.log {{.*}} : f64
  // CHECK: memref.store %{{.*}}, %[[SUMS]][%[[ROW]], %{{.*}}]
  // The bias sweep, after the K loop.
  // CHECK: vector.transfer_read %{{.*}} : tensor<8xi32>, vector<8xi32>
  // CHECK: bufferization.to_tensor %[[SUMS]] restrict writable
  // CHECK: } else {
  // CHECK: memref.alloc() : memref<4x8xi64>
  // CHECK: math.fma {{.*}} : vector<4xf64>
  // CHECK: math.powf {{.*}} : f64
  // CHECK: return %[[ACC]]
  %0 = lns.linear %x, %w bias %b : tensor<4x17x!lns.num<f = 10>>, tensor<6x17x!lns.num<f = 12>>, tensor<6x!lns.num<f = 10>> -> tensor<4x6x!lns.num<f = 10>>
  return %0 : tensor<4x6x!lns.num<f = 10>>
}

// -----

// Where the cubics' bound is too loose to decide most roundings (here
// f = 30), the K-outer scf.for updates every output element-wise through
// the polynomial fast path of ideal sbdb — no libm call — and ORs its
// near-tie flag into a per-output i8; the bias is added once at the end.
// Then each flagged output is recomputed from scratch with the exact
// formula (libm pow and log), in the same order.
// CHECK-LABEL: func.func @linear_beyond_cubics
func.func @linear_beyond_cubics(%x: tensor<4x17x!lns.num<f = 30>>, %w: tensor<6x17x!lns.num<f = 30>>, %b: tensor<6x!lns.num<f = 30>>) -> tensor<4x6x!lns.num<f = 30>> {
  // CHECK: %[[Z:.+]] = linalg.fill ins(%c-9007199254740991_i64 : i64)
  // CHECK: %[[NOFLAGS:.+]] = linalg.fill ins(%c0_i8 : i8)
  // CHECK: %[[ACC:.+]]:2 = scf.for %{{.*}} = %c0 to %c17 step %{{.*}} iter_args(%{{.*}} = %[[Z]], %{{.*}} = %[[NOFLAGS]]) -> (tensor<4x6xi64>, tensor<4x6xi8>)
  // CHECK: tensor.extract_slice {{.*}} to tensor<4xi64>
  // CHECK: tensor.extract_slice {{.*}} to tensor<6xi64>
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4xi64>, tensor<6xi64>) outs(%{{.*}}, %{{.*}} : tensor<4x6xi64>, tensor<4x6xi8>)
  // CHECK-NOT: math.powf
  // CHECK: math.fma
  // CHECK-NOT: math.log
  // CHECK: scf.yield
  // CHECK: %[[BIASED:.+]]:2 = linalg.generic {{.*}} ins(%{{.*}} : tensor<6xi64>) outs(%[[ACC]]#0, %[[ACC]]#1 : tensor<4x6xi64>, tensor<4x6xi8>)
  // CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[BIASED]]#0)
  // CHECK: scf.for
  // CHECK: tensor.extract %[[BIASED]]#1
  // CHECK: scf.if
  // CHECK: math.powf
  // CHECK: math.log
  // CHECK: tensor.insert
  %0 = lns.linear %x, %w bias %b : tensor<4x17x!lns.num<f = 30>>, tensor<6x17x!lns.num<f = 30>>, tensor<6x!lns.num<f = 30>> -> tensor<4x6x!lns.num<f = 30>>
  return %0 : tensor<4x6x!lns.num<f = 30>>
}

// -----

// Other shapes (here a batch dim) run one scf.for per output element.
// CHECK-LABEL: func.func @batched_linear
func.func @batched_linear(%x: tensor<2x4x17x!lns.num<f = 10>>, %w: tensor<6x17x!lns.num<f = 10>>) -> tensor<2x4x6x!lns.num<f = 10>> {
  // CHECK: tensor.generate
  // CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %c-9007199254740991_i64) -> (i64)
  // CHECK: tensor.extract
  // CHECK: tensor.extract
  // CHECK: math.powf
  // CHECK: scf.yield
  // CHECK: tensor.yield
  %0 = lns.linear %x, %w : tensor<2x4x17x!lns.num<f = 10>>, tensor<6x17x!lns.num<f = 10>> -> tensor<2x4x6x!lns.num<f = 10>>
  return %0 : tensor<2x4x6x!lns.num<f = 10>>
}

// -----

// Ops that only carry LNS values get converted types.
// CHECK-LABEL: func.func @carriers
// CHECK-SAME: (%[[B:.+]]: tensor<6xi64>) -> tensor<4x6xi64>
func.func @carriers(%b: tensor<6x!lns.num<f = 10>>) -> tensor<4x6x!lns.num<f = 10>> {
  // CHECK: %[[E:.+]] = tensor.empty() : tensor<4x6xi64>
  // CHECK: linalg.broadcast ins(%[[B]] : tensor<6xi64>) outs(%[[E]] : tensor<4x6xi64>) dimensions = [0]
  %e = tensor.empty() : tensor<4x6x!lns.num<f = 10>>
  %0 = linalg.broadcast ins(%b : tensor<6x!lns.num<f = 10>>) outs(%e : tensor<4x6x!lns.num<f = 10>>) dimensions = [0]
  return %0 : tensor<4x6x!lns.num<f = 10>>
}

// -----

// The explicit pairwise order: the reduced elements copied out, then level
// by level element i becomes add(v[2i], v[2i+1]) (an odd last one added to
// zero) until one is left.
// CHECK-LABEL: func.func @pairwise_sum
// CHECK: %[[COPY:.+]] = scf.for {{.*}} -> (tensor<?xi64>)
// CHECK: tensor.insert
// CHECK: %[[LEVELS:.+]]:2 = scf.while ({{.*}}, {{.*}} = %[[COPY]]) : (index, tensor<?xi64>)
// CHECK: arith.cmpi ugt
// CHECK: scf.condition
// CHECK: arith.divui
// CHECK: scf.for
// CHECK: arith.minui
// CHECK: arith.select {{.*}}, %c-9007199254740991_i64
// CHECK: math.powf
// CHECK: tensor.insert
// CHECK: tensor.extract %[[LEVELS]]#1[%c0{{.*}}]
func.func @pairwise_sum(%x: tensor<5x!lns.num<f = 10>>) -> !lns.num<f = 10> {
  %0 = lns.sum %x dims [0] order pairwise : tensor<5x!lns.num<f = 10>> -> !lns.num<f = 10>
  return %0 : !lns.num<f = 10>
}

// -----

// Table mode checks that every code is below 2^26 (or the zero code) and
// then runs on i32 lanes, the zero code mapped to −2^31 + 1 and back;
// otherwise on the i64 codes. At f = 10 and K = 8 the kernel's zero region
// holds: zero codes are lifted to −2^28, x and W are packed into panels
// ([M/4, K, 4] and [N/16, K, 16]), and each tile of 4 rows × 2 vectors
// keeps its 8 accumulators in registers over k, adding through one gather
// of the table of sbdb codes (z = 0 of opposite signs: −2^29) per vector,
// without the zero rules; sums that end below −5·2^25 are zero.
// CHECK-LABEL: func.func @table_linear
// CHECK: arith.constant 67108864 : i64
// CHECK: %[[X:.+]] = tensor.extract {{.*}} : tensor<i1>
// CHECK: %[[W:.+]] = tensor.extract {{.*}} : tensor<i1>
// CHECK-NEXT: %[[ALL:.+]] = arith.andi %[[X]], %[[W]] : i1
// CHECK-NEXT: scf.if %[[ALL]] -> (tensor<4x32xi64>)
// CHECK: arith.trunci {{.*}} : i64 to i32
// CHECK: %[[TABLE:.+]] = arith.constant dense<{{.*}}> : tensor<43128xi32>
// CHECK: arith.maxsi %{{.*}}, %c-268435456_i32
// CHECK: linalg.transpose {{.*}} outs(%{{.*}} : tensor<1x8x4xi32>) permutation = [1, 0, 2]
// CHECK: %[[WP:.+]] = linalg.transpose {{.*}} outs(%{{.*}} : tensor<2x8x16xi32>) permutation = [1, 0, 2]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args(%[[ACC:[^ ]+]] = {{.*}}) -> (vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>)
// CHECK: vector.transfer_read %[[WP]]
// CHECK: %[[EA:.+]] = arith.shrsi %[[ACC]]
// CHECK: %[[EP:.+]] = arith.shrsi
// CHECK: %[[D:.+]] = arith.subi %[[EA]], %[[EP]]
// CHECK: %[[ROW:.+]] = math.absi %[[D]] : vector<8xi32>
// CHECK: arith.minsi %[[ROW]], %cst{{.*}} : vector<8xi32>
// CHECK: %[[SBDB:.+]] = vector.gather %[[TABLE]]
// CHECK: %[[MAX:.+]] = arith.maxsi %[[ACC]], %{{.*}} : vector<8xi32>
// CHECK-NEXT: arith.addi %[[MAX]], %[[SBDB]] : vector<8xi32>
// CHECK: scf.yield {{.*}} : vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>, vector<8xi32>
// CHECK: %[[ZERO:.+]] = arith.cmpi slt, %{{.*}}, %cst{{.*}} : vector<8xi32>
// CHECK: arith.select %[[ZERO]]
// CHECK: vector.store
// CHECK: arith.extsi {{.*}} : i32 to i64
// CHECK: } else {
// CHECK: scf.for {{.*}} -> (vector<4xi64>, vector<4xi64>, vector<4xi64>, vector<4xi64>, vector<4xi64>, vector<4xi64>, vector<4xi64>, vector<4xi64>)
// CHECK: vector.gather {{.*}} : tensor<43126xi32>, vector<4xi32>
func.func @table_linear(%x: tensor<4x8x!lns.num<f = 10>>, %w: tensor<32x8x!lns.num<f = 10>>) -> tensor<4x32x!lns.num<f = 10>> {
  %0 = lns.linear %x, %w sbdb table : tensor<4x8x!lns.num<f = 10>>, tensor<32x8x!lns.num<f = 10>> -> tensor<4x32x!lns.num<f = 10>>
  return %0 : tensor<4x32x!lns.num<f = 10>>
}

// -----

// The order of lns.cmp: codes of one sign compare as integers (reversed
// for negatives); of opposite signs the positive one is greater.
// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[X:.+]]: i64, %[[Y:.+]]: i64) -> i1
func.func @compare(%x: !lns.num<f = 10>, %y: !lns.num<f = 10>) -> i1 {
  // CHECK-DAG: %[[XS:.+]] = arith.andi %[[X]], %c1_i64
  // CHECK-DAG: %[[YS:.+]] = arith.andi %[[Y]], %c1_i64
  // CHECK: %[[DIFFER:.+]] = arith.cmpi ne, %[[XS]], %[[YS]]
  // CHECK: %[[POS:.+]] = arith.cmpi eq, %[[XS]], %c0_i64
  // CHECK: %[[ABOVE:.+]] = arith.cmpi sgt, %[[X]], %[[Y]]
  // CHECK: %[[BELOW:.+]] = arith.cmpi slt, %[[X]], %[[Y]]
  // CHECK: %[[SAME:.+]] = arith.select %[[POS]], %[[ABOVE]], %[[BELOW]]
  // CHECK: %[[GT:.+]] = arith.select %[[DIFFER]], %[[POS]], %[[SAME]]
  // CHECK: return %[[GT]]
  %0 = lns.cmp gt, %x, %y : !lns.num<f = 10>, !lns.num<f = 10> -> i1
  return %0 : i1
}

// -----

// relu keeps codes with a clear sign bit; relu_grad zeroes where either
// the output or the cotangent is zero.
// CHECK-LABEL: func.func @relu
// CHECK-SAME: (%[[X:.+]]: i64, %[[G:.+]]: i64) -> (i64, i64)
func.func @relu(%x: !lns.num<f = 10>, %g: !lns.num<f = 10>) -> (!lns.num<f = 10>, !lns.num<f = 10>) {
  // CHECK: %[[S:.+]] = arith.andi %[[X]], %c1_i64
  // CHECK: %[[NEG:.+]] = arith.cmpi ne, %[[S]], %c0_i64
  // CHECK: %[[R:.+]] = arith.select %[[NEG]], %c-9007199254740991_i64, %[[X]]
  %0 = lns.relu %x : !lns.num<f = 10>
  // CHECK: %[[GO:.+]] = arith.ori %[[G]], %c1_i64
  // CHECK: %[[ZG:.+]] = arith.cmpi eq, %[[GO]], %c-9007199254740991_i64
  // CHECK: %[[RO:.+]] = arith.ori %[[R]], %c1_i64
  // CHECK: %[[ZR:.+]] = arith.cmpi eq, %[[RO]], %c-9007199254740991_i64
  // CHECK: %[[ANY:.+]] = arith.ori %[[ZG]], %[[ZR]]
  // CHECK: %[[GX:.+]] = arith.select %[[ANY]], %c-9007199254740991_i64{{.*}}, %[[G]]
  // CHECK: return %[[R]], %[[GX]]
  %1 = lns.relu_grad %g, %0 : !lns.num<f = 10>
  return %0, %1 : !lns.num<f = 10>, !lns.num<f = 10>
}
