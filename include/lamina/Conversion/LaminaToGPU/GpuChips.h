//===- GpuChips.h - The GPUs Lamina generates kernels for -------*- C++ -*-===//
//
// The one list of supported chips: the GPU conversion picks its kernel
// family from it, and every option, help text and diagnostic naming chips
// is written from it.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_CONVERSION_LAMINATOGPU_GPUCHIPS_H
#define LAMINA_CONVERSION_LAMINATOGPU_GPUCHIPS_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::lamina {

/// How a chip's tensor-core kernels are built.
enum class GpuKernelFamily {
  /// TMA + mbarrier ring, warp-specialised wgmma (Hopper, `a` variant only).
  Wgmma,
  /// cp.async ring, ldmatrix, mma.sync m16n8k16 (Ampere and later).
  MmaSync,
};

struct GpuChip {
  llvm::StringLiteral name;
  GpuKernelFamily family;
};

inline constexpr GpuChip kGpuChips[] = {
    {"sm_90a", GpuKernelFamily::Wgmma},  {"sm_80", GpuKernelFamily::MmaSync},
    {"sm_86", GpuKernelFamily::MmaSync}, {"sm_89", GpuKernelFamily::MmaSync},
    {"sm_90", GpuKernelFamily::MmaSync},
};

/// The chip compiled for when none is named.
inline constexpr llvm::StringLiteral kDefaultGpuChip = "sm_90a";

/// The kernel family of `chip`, or nullopt for an unsupported chip.
inline std::optional<GpuKernelFamily> lookupGpuChip(llvm::StringRef chip) {
  for (const GpuChip &known : kGpuChips)
    if (known.name == chip)
      return known.family;
  return std::nullopt;
}

/// "sm_90a (wgmma) or sm_80, sm_86, sm_89, sm_90 (mma.sync)", for help
/// texts and diagnostics.
inline std::string describeGpuChips() {
  auto names = [](GpuKernelFamily family) {
    std::string list;
    for (const GpuChip &chip : kGpuChips)
      if (chip.family == family)
        list += (list.empty() ? "" : ", ") + chip.name.str();
    return list;
  };
  return names(GpuKernelFamily::Wgmma) + " (wgmma) or " +
         names(GpuKernelFamily::MmaSync) + " (mma.sync)";
}

/// The help text of every `chip` option.
inline llvm::StringRef gpuChipOptionHelp() {
  static const std::string help = "target GPU: " + describeGpuChips();
  return help;
}

} // namespace mlir::lamina

#endif // LAMINA_CONVERSION_LAMINATOGPU_GPUCHIPS_H
