//===- CompileCache.h - Compiled programs kept between processes -*- C++ -*-===//
//
// A program's object code and the host-side facts its lowering decided (the
// weight packing plan, whether it calls MPI or OpenMP), stored on disk under
// a key that names everything the code depends on, so that a later process
// building the same program loads it instead of compiling it again.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_COMPILECACHE_H
#define LAMINA_EXECUTION_COMPILECACHE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::lamina {

/// One stored program: its facts (a module's attributes, as text) and its
/// object file.
struct CacheEntry {
  std::string metadata;
  std::unique_ptr<llvm::MemoryBuffer> object;
};

class CompileCache {
public:
  /// The cache the environment selects: off with LAMINA_CACHE=0; in
  /// LAMINA_CACHE_DIR, else $XDG_CACHE_HOME/lamina, else ~/.cache/lamina;
  /// at most LAMINA_CACHE_MAX_MB megabytes (default 2048), the least
  /// recently used entries removed first.
  static CompileCache fromEnvironment();

  bool isEnabled() const { return !directory.empty(); }
  llvm::StringRef getDirectory() const { return directory; }

  /// The key of `entry` of `module` lowered by `pipeline`: a SHA-256 of
  /// the module, the entry, the pipeline with its options, this host's CPU
  /// and its features, LLVM's version and this build of Lamina.
  static std::string computeKey(ModuleOp module, llvm::StringRef entry,
                                llvm::StringRef pipeline);

  /// The entry stored under `key`, or nullopt. A damaged entry (truncated,
  /// or not what was written) is removed and reported in `warnings`.
  std::optional<CacheEntry> lookup(llvm::StringRef key,
                                   std::vector<std::string> &warnings) const;

  /// Stores an entry under `key` (written to a private file, then renamed:
  /// processes storing the same key at once leave one whole entry). A
  /// failure to store is reported in `warnings`; the program runs anyway.
  void store(llvm::StringRef key, llvm::StringRef metadata,
             llvm::MemoryBufferRef object,
             std::vector<std::string> &warnings) const;

  /// Removes `key`'s entry (a stored entry that fails to load).
  void remove(llvm::StringRef key) const;

private:
  std::string pathOf(llvm::StringRef key) const;
  /// Removes the least recently used entries while the cache is larger
  /// than its limit.
  void evict() const;

  std::string directory;
  uint64_t maxBytes = 0;
};

} // namespace mlir::lamina

#endif // LAMINA_EXECUTION_COMPILECACHE_H
