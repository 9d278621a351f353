//===- Passes.td - Transformations of the lns dialect ------*- tablegen -*-===//

#ifndef LAMINA_LNS_TRANSFORMS_PASSES_TD
#define LAMINA_LNS_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LaminaLnsTables : Pass<"lamina-lns-tables"> {
  let summary = "Compute LNS additions from precomputed tables where f <= 16";
  let description = [{
    `table` mode gives the codes of `ideal` mode (the same double formula,
    evaluated for every z when compiling) at a fraction of the cost: on the
    CPU a lookup instead of polynomials and libm calls. This pass switches
    every `lns` op that adds (`add`, `sub`, `sum`, `matmul`, `linear`) in
    `ideal` mode to `table` mode when its base is given by f <= 16; other
    ops keep `ideal`, where no table is defined. Lamina's layers lower to
    such ops, so `lamina-cpu-pipeline{lns-tables=true}` runs LNS layers on
    tables.

    ```mlir
    %y = lns.linear %x, %w : tensor<4x8x!lns.num<f = 10>>, ... // before
    %y = lns.linear %x, %w sbdb table : ...                     // after
    ```
  }];
}

def LaminaLnsDecompose : Pass<"lamina-lns-decompose"> {
  let summary = "Expand lns softmax, log_softmax, nll_loss and conv2d";
  let description = [{
    Rewrites the composite ops of a small LNS network into lns arithmetic,
    linalg and tensor ops that convert-lns-to-arith lowers, keeping the
    reference's order of additions: softmax and log_softmax into lns.exp,
    a sequential lns.sum broadcast back, and lns.div / lns.log with lns.sub;
    nll_loss and its gradient into a tensor.generate picking each sample's
    class and a sequential sum (divided by the code of the kept count for a
    mean); conv2d into Z padding, a window gather (one row per output
    position, its terms in (c, kh, kw) order) and one lns.linear.
    lamina-cpu-pipeline runs it before the choice of sbdb tables, so the
    sums it creates take tables too.

    ```mlir
    %p = lns.softmax %x dim 1 : tensor<4x10x!lns.num<f = 23>>
    // becomes
    %e = lns.exp %x : tensor<4x10x!lns.num<f = 23>>
    %s = lns.sum %e dims [1] : tensor<4x10x!lns.num<f = 23>> -> tensor<4x!lns.num<f = 23>>
    %b = linalg.broadcast ins(%s : ...) outs(...) dimensions = [1]
    %p = lns.div %e, %b : ...
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
}

#endif // LAMINA_LNS_TRANSFORMS_PASSES_TD
