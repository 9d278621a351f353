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

#endif // LAMINA_LNS_TRANSFORMS_PASSES_TD
