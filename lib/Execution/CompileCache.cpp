//===- CompileCache.cpp - Compiled programs kept between processes --------===//

#include "lamina/Execution/CompileCache.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cstdlib>
#include <dlfcn.h>

using namespace mlir;
using namespace mlir::lamina;

/// The first line of every entry; a new format changes it.
static constexpr llvm::StringLiteral kMagic = "lamina-compile-cache 1\n";
static constexpr llvm::StringLiteral kSuffix = ".lamina";

static std::string getEnvironment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

CompileCache CompileCache::fromEnvironment() {
  CompileCache cache;
  if (getEnvironment("LAMINA_CACHE") == "0")
    return cache;
  llvm::SmallString<128> directory(getEnvironment("LAMINA_CACHE_DIR"));
  if (directory.empty()) {
    std::string base = getEnvironment("XDG_CACHE_HOME");
    if (!base.empty()) {
      directory = base;
    } else {
      std::string home = getEnvironment("HOME");
      if (home.empty())
        return cache; // nowhere to keep it
      directory = home;
      llvm::sys::path::append(directory, ".cache");
    }
    llvm::sys::path::append(directory, "lamina");
  }
  cache.directory = std::string(directory);
  uint64_t megabytes = 2048;
  std::string limit = getEnvironment("LAMINA_CACHE_MAX_MB");
  if (!limit.empty())
    llvm::to_integer(limit, megabytes);
  cache.maxBytes = megabytes << 20;
  return cache;
}

/// This build of Lamina: the file holding this code (a tool or the Python
/// module), its size and modification time, so that a rebuilt Lamina
/// never loads code an older one compiled.
static std::string getBuildIdentity() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&getBuildIdentity), &info) ||
      !info.dli_fname)
    return "unknown";
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(info.dli_fname, status))
    return info.dli_fname;
  return (llvm::Twine(info.dli_fname) + ":" + llvm::Twine(status.getSize()) +
          ":" +
          llvm::Twine(status.getLastModificationTime().time_since_epoch().count()))
      .str();
}

std::string CompileCache::computeKey(ModuleOp module, llvm::StringRef entry,
                                     llvm::StringRef pipeline) {
  llvm::SHA256 hash;
  auto add = [&](llvm::StringRef part) {
    hash.update(part);
    hash.update(llvm::StringRef("\0", 1));
  };
  add(kMagic);
  add(getBuildIdentity());
  add(LLVM_VERSION_STRING);
  add(llvm::sys::getHostCPUName());
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> enabled;
  for (const auto &feature : features)
    if (feature.getValue())
      enabled.push_back(feature.getKey().str());
  llvm::sort(enabled);
  for (const std::string &feature : enabled)
    add(feature);
  add(entry);
  add(pipeline);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(false));
  add(text);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::string CompileCache::pathOf(llvm::StringRef key) const {
  llvm::SmallString<128> path(directory);
  llvm::sys::path::append(path, key + kSuffix);
  return std::string(path);
}

/// The SHA-256 of an entry's contents, as the header records it.
static std::string checksum(llvm::StringRef metadata, llvm::StringRef object) {
  llvm::SHA256 hash;
  hash.update(metadata);
  hash.update(object);
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

/// Sets the modification time of `path` to now: eviction removes the
/// entries used longest ago first.
static void markUsed(llvm::StringRef path) {
  int descriptor;
  if (llvm::sys::fs::openFileForWrite(path, descriptor,
                                      llvm::sys::fs::CD_OpenExisting,
                                      llvm::sys::fs::OF_Append))
    return;
  (void)llvm::sys::fs::setLastAccessAndModificationTime(
      descriptor, std::chrono::system_clock::now());
  llvm::sys::Process::SafelyCloseFileDescriptor(descriptor);
}

std::optional<CacheEntry>
CompileCache::lookup(llvm::StringRef key,
                     std::vector<std::string> &warnings) const {
  std::string path = pathOf(key);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return std::nullopt; // a miss
  // magic, key, metadata size, object size, checksum; then the bytes.
  llvm::StringRef rest = (*file)->getBuffer();
  auto damaged = [&](llvm::StringRef why) -> std::optional<CacheEntry> {
    warnings.push_back(("the compile cache entry " + path + " is damaged (" +
                        why + "); it is removed and the program compiled "
                        "again")
                           .str());
    llvm::sys::fs::remove(path);
    return std::nullopt;
  };
  if (!rest.consume_front(kMagic))
    return damaged("not a Lamina cache entry of this format");
  llvm::SmallVector<llvm::StringRef, 4> header;
  for (int i = 0; i < 4; ++i) {
    size_t newline = rest.find('\n');
    if (newline == llvm::StringRef::npos)
      return damaged("its header is cut short");
    header.push_back(rest.take_front(newline));
    rest = rest.drop_front(newline + 1);
  }
  uint64_t metadataSize = 0, objectSize = 0;
  if (header[0] != key || header[1].getAsInteger(10, metadataSize) ||
      header[2].getAsInteger(10, objectSize))
    return damaged("its header does not describe this key");
  if (rest.size() != metadataSize + objectSize)
    return damaged("it holds " + std::to_string(rest.size()) +
                   " bytes where its header says " +
                   std::to_string(metadataSize + objectSize));
  llvm::StringRef metadata = rest.take_front(metadataSize);
  llvm::StringRef object = rest.drop_front(metadataSize);
  if (checksum(metadata, object) != header[3])
    return damaged("its contents do not match their checksum");
  markUsed(path);
  CacheEntry entry;
  entry.metadata = metadata.str();
  entry.object = llvm::MemoryBuffer::getMemBufferCopy(object, path);
  return entry;
}

void CompileCache::store(llvm::StringRef key, llvm::StringRef metadata,
                         llvm::MemoryBufferRef object,
                         std::vector<std::string> &warnings) const {
  auto failed = [&](const llvm::Twine &why) {
    warnings.push_back(("the compiled program could not be stored in the "
                        "compile cache " +
                        directory + ": " + why)
                           .str());
  };
  if (std::error_code error = llvm::sys::fs::create_directories(directory))
    return failed(error.message());
  llvm::SmallString<128> temporary;
  int descriptor = -1;
  if (std::error_code error = llvm::sys::fs::createUniqueFile(
          pathOf(key) + ".%%%%%%%%.tmp", descriptor, temporary))
    return failed(error.message());
  {
    llvm::raw_fd_ostream os(descriptor, /*shouldClose=*/true);
    os << kMagic << key << "\n"
       << metadata.size() << "\n"
       << object.getBufferSize() << "\n"
       << checksum(metadata, object.getBuffer()) << "\n"
       << metadata << object.getBuffer();
    os.close();
    if (os.has_error()) {
      llvm::sys::fs::remove(temporary);
      return failed(os.error().message());
    }
  }
  // Atomic: a reader sees no entry or a whole one.
  if (std::error_code error = llvm::sys::fs::rename(temporary, pathOf(key))) {
    llvm::sys::fs::remove(temporary);
    return failed(error.message());
  }
  evict();
}

void CompileCache::remove(llvm::StringRef key) const {
  llvm::sys::fs::remove(pathOf(key));
}

void CompileCache::evict() const {
  struct Stored {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> used;
  };
  std::vector<Stored> entries;
  uint64_t total = 0;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(directory, error), end;
       it != end && !error; it.increment(error)) {
    if (!llvm::StringRef(it->path()).ends_with(kSuffix))
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status))
      continue;
    entries.push_back({it->path(), status.getSize(),
                       status.getLastModificationTime()});
    total += status.getSize();
  }
  if (total <= maxBytes)
    return;
  llvm::sort(entries, [](const Stored &a, const Stored &b) {
    return a.used < b.used;
  });
  for (const Stored &entry : entries) {
    if (total <= maxBytes)
      break;
    if (!llvm::sys::fs::remove(entry.path))
      total -= entry.size;
  }
}
