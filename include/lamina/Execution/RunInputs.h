//===- RunInputs.h - Arguments as lamina-run's --input spells them -*- C++
//-*-===//

#ifndef LAMINA_EXECUTION_RUNINPUTS_H
#define LAMINA_EXECUTION_RUNINPUTS_H

#include "lamina/Execution/HostTensor.h"

namespace mlir::lamina {

/// A scalar `<type>:<value>` (i64, i32, f32, f64). Other text is an error
/// that says what the text names instead when it is a path (a directory,
/// a file that is not .npy).
llvm::Expected<HostTensor> parseScalarInput(llvm::StringRef text);

/// One --input: a path ending in `.npy` is read as a .npy file, other
/// text as a scalar.
llvm::Expected<HostTensor> readRunInput(llvm::StringRef text);

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_RUNINPUTS_H
