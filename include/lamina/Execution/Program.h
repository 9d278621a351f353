//===- Program.h - Compile a module and run it from the host ---*- C++ -*-===//
//
// One API for every target (Executable.h): a module compiled for the host
// CPU or a GPU, its signature read, arguments checked, sharded over ranks
// and packed once, pipeline stages run on their ranks.
//
//===----------------------------------------------------------------------===//

#ifndef LAMINA_EXECUTION_PROGRAM_H
#define LAMINA_EXECUTION_PROGRAM_H

#include "lamina/Execution/Executable.h"
#include "lamina/Execution/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/Timing.h"

#include <memory>
#include <optional>

namespace mlir {
namespace lamina {
struct CacheEntry;

/// One argument or result of the entry function as the host sees it.
struct ArgumentSpec {
  bool isScalar = false;
  ElementKind kind = ElementKind::F32;
  /// The whole tensor's shape: what the host passes, or the whole result.
  llvm::SmallVector<int64_t> shape;
  /// In a program of several ranks, the axis on which each rank holds only
  /// its block (layout S(axis)); the host passes a whole argument, of which
  /// the program takes each rank's block itself, or this rank's block.
  std::optional<int64_t> shardAxis;
  /// The sharded axis is this many equal groups, each split over the ranks
  /// (layout S(axis, groups = g)): a rank's block is its part of each.
  int64_t shardGroups = 1;
  std::string typeText; // the MLIR type, for messages
};

/// The host view of `type` (a static-shaped tensor or a scalar; LNS numbers
/// as their i64 codes), or why the host cannot pass it; `role` names it in
/// the message ("argument 2").
llvm::Expected<ArgumentSpec> describeHostValue(Type type, llvm::StringRef role);

/// Fails, naming `role`, when a static tensor of `type` does not fit in 64
/// bits of bytes or in this machine's memory: what the host or the program
/// would allocate is checked before anything runs.
llvm::Error checkFitsInMemory(RankedTensorType type, llvm::StringRef role);

/// Runs the textual pass pipeline `pipeline` on `module`, with the pass
/// manager flags the tool registered (lamina-run does; Python does not);
/// the passes must be registered. Pass times go under `timing` (a scope of
/// a compile's timing; none: the tool's --mlir-timing, if given).
llvm::Error runPassPipeline(ModuleOp module, llvm::StringRef pipeline,
                            TimingScope *timing = nullptr);

/// A module compiled for a target and loaded for calls from the host.
/// Inputs are never written; results are returned in fresh host tensors.
class Program {
public:
  /// Prepares `module` for the host (the `lamina-host-prepare` pipeline),
  /// reads `entry`'s signature, lowers and builds it for `target` and loads
  /// it for calls. The pipelines must be registered (registerAllPasses).
  static llvm::Expected<std::unique_ptr<Program>>
  compile(OwningOpRef<ModuleOp> module, llvm::StringRef entry,
          const ProgramTarget &target);
  /// compile() for the host CPU with the textual pass pipeline `pipeline`
  /// (e.g. "lamina-cpu-pipeline").
  static llvm::Expected<std::unique_ptr<Program>>
  compile(OwningOpRef<ModuleOp> module, llvm::StringRef entry,
          llvm::StringRef pipeline);

  ~Program();

  llvm::ArrayRef<ArgumentSpec> getInputs() const { return inputs; }
  llvm::ArrayRef<ArgumentSpec> getResults() const { return results; }

  /// The number of MPI ranks the program is built for (1: no MPI): the
  /// ranks its values are sharded over (the tensor axis), or else its
  /// pipeline stages.
  int64_t getWorldSize() const { return worldSize > 1 ? worldSize : stageCount; }
  /// This process's rank among those (0 in a program of one rank).
  int64_t getRank() const;
  /// The size of the axis this process runs on (1 for a program that does
  /// not use MPI). A pipelined program also runs whole in a world of 1.
  int64_t getActiveWorldSize() const;
  /// The shape this rank holds of a value described by `spec`.
  llvm::SmallVector<int64_t> getLocalShape(const ArgumentSpec &spec) const;

  /// Arguments checked against the entry's signature, with the weights the
  /// program packs at load time already packed: prepare once, call often.
  struct PreparedArguments {
    std::vector<HostTensor> tensors;
    /// A pipelined program on several ranks: the arguments of each stage
    /// this rank runs (activations from other stages are filled in by
    /// `run`), packed weights last.
    std::vector<std::vector<HostTensor>> stageArguments;
  };
  /// `args` are moved into the prepared arguments (a sharded one passed
  /// whole gives way to this rank's block).
  llvm::Expected<PreparedArguments> prepare(std::vector<HostTensor> args);

  /// Replaces arguments of `prepared` (argument number → the new value,
  /// checked as `prepare` checks it), packing the weights again only when
  /// one of the replaced arguments is one the packing reads: new
  /// activations reuse the packed weights. Fails for a pipelined program
  /// on several ranks, whose arguments `prepare` splits by stage.
  llvm::Error update(PreparedArguments &prepared,
                     std::vector<std::pair<size_t, HostTensor>> args);

  /// Packs the weights of `prepared` again from its arguments, as `update`
  /// does when an argument the packing reads changes: what a call costs
  /// whose packed arguments (a backward's activations and cotangents)
  /// change on every call. Fails for a pipelined program on several ranks.
  llvm::Error repack(PreparedArguments &prepared);

  /// How many times this program has packed its weights (prepare, or an
  /// update of an argument the packing reads).
  int64_t getPackCount() const { return packCount; }

  /// Whether the compile cache held this program ("hit"), stored it
  /// ("miss"), or is off ("off"; CompileCache).
  llvm::StringRef getCacheStatus() const { return cacheStatus; }

  /// What the compile reports without failing (a damaged cache entry, a
  /// cache that cannot be written), one message each.
  llvm::ArrayRef<std::string> getWarnings() const { return warnings; }

  /// Runs the entry once on prepared arguments. A result sharded over ranks
  /// (`shardAxis`) is this rank's block of it. A pipelined entry (split by
  /// lamina-split-pipeline-stages) on as many ranks as stages runs stage i
  /// on rank i, sending each value a later stage needs to its rank; every
  /// rank returns the whole results.
  llvm::Expected<std::vector<HostTensor>> run(const PreparedArguments &args);

  /// Runs the entry on values already in the target's memory (`args` in
  /// signature order, `outputs` one per result, filled), ordered on the
  /// target's `stream`, without waiting where the target can: how
  /// PyTorch's CUDA tensors are passed. Only for an entry of one rank
  /// whose weights are not packed.
  llvm::Error runResident(llvm::ArrayRef<CallValue> args,
                          llvm::ArrayRef<CallValue> outputs, void *stream);

  /// Runs this rank's stages of a pipelined entry alone: the results it
  /// computed or received (nullopt for the others), and its sends left to
  /// complete while later calls run (mpiCompleteDeferredSends), so that
  /// ranks may interleave the stages of several calls in their own orders
  /// (1F1B). Any other entry runs as `run` does.
  llvm::Expected<std::vector<std::optional<HostTensor>>>
  runStage(const PreparedArguments &args);

  /// Per result, the rank whose stage computes it (-1 for an entry that is
  /// not pipelined).
  std::vector<int64_t> getResultStages() const;

private:
  Program() = default;

  std::unique_ptr<Executable> code;
  std::string entry;
  std::string cacheStatus = "off";
  std::vector<std::string> warnings;
  /// Calls `function` through its C interface: `args` then `outputs` (as
  /// out-parameters), which it fills.
  llvm::Error invoke(llvm::StringRef function,
                     llvm::ArrayRef<HostTensor> args,
                     llvm::ArrayRef<ArgumentSpec> argSpecs,
                     std::vector<HostTensor> &outputs);

  /// Fails unless this process runs in an MPI world of `worldSize` ranks.
  llvm::Error checkWorld() const;

  /// Where a stage call's operand or an entry result comes from: result
  /// `index` of call `call`, or the entry's argument `index` (call = -1).
  struct ValueSource {
    int64_t call = -1;
    int64_t index = 0;
  };
  /// One call of a pipeline stage function in the entry, run by `rank`.
  struct StageCall {
    std::string function;
    int64_t rank = 0;
    llvm::SmallVector<ValueSource> operands;
    llvm::SmallVector<ArgumentSpec> inputs, results, packedWeights;
    /// The operands `<function>_pack_weights` reads (any, unless known).
    llvm::SmallVector<int64_t> packSources;
    bool packSourcesKnown = false;
  };
  /// The steps of `compile`, in order.
  llvm::Error describeSignature(func::FuncOp function, bool partitioned);
  llvm::Error describePipelineStages(func::FuncOp function);
  llvm::Error readWeightPacking(ModuleOp module);
  /// A program of several ranks that neither shards a value nor calls MPI
  /// (`callsMpi`) runs on any number of processes.
  void settleWorldSize(bool callsMpi);
  /// The functions the host calls (through their C interfaces).
  llvm::SmallVector<std::string> getHostFunctions() const;
  /// Loads a cached compile of the lowered program: its facts, then its
  /// code.
  llvm::Error loadCached(MLIRContext *context, const CacheEntry &cached,
                         const ProgramTarget &target);

  llvm::Expected<PreparedArguments>
  preparePipeline(llvm::ArrayRef<HostTensor> args,
                  llvm::ArrayRef<bool> isBlock);
  /// Entry argument `index` as a stage takes it (`isBlock`: given as this
  /// rank's block of a sharded argument).
  HostTensor stageArgument(const HostTensor &arg, size_t index,
                           bool isBlock) const;
  /// update() of a pipeline's prepared stages: each of this rank's stages
  /// takes the new arguments it reads, and packs its weights again only if
  /// its packing reads one of them.
  llvm::Error updatePipeline(PreparedArguments &prepared,
                             std::vector<std::pair<size_t, HostTensor>> args,
                             llvm::ArrayRef<bool> isBlock);
  /// Checks the arguments of an update against the signature; `isBlock`
  /// gets, per argument, whether it is this rank's block of a sharded one.
  llvm::Error
  checkUpdatedArguments(llvm::ArrayRef<std::pair<size_t, HostTensor>> args,
                        llvm::SmallVectorImpl<bool> &isBlock) const;
  /// Packs stage `stage`'s weights from the first `stage.inputs.size()`
  /// tensors of `stageArgs`, replacing any packed before.
  llvm::Error packStage(const StageCall &stage,
                        std::vector<HostTensor> &stageArgs);
  /// Checks argument `index` against the signature; sets `isBlock` when it
  /// is this rank's block of a sharded argument rather than the whole.
  llvm::Error checkArgument(size_t index, const HostTensor &arg,
                            bool &isBlock) const;
  /// Packs the weights from the first `inputs.size()` tensors of
  /// `prepared`, replacing any packed before.
  llvm::Error pack(PreparedArguments &prepared);
  /// run / runStage of a pipelined entry (`stageLocal`: runStage).
  llvm::Expected<std::vector<std::optional<HostTensor>>>
  runPipeline(const PreparedArguments &args, bool stageLocal);

  /// The entry's stage calls, in order, when it is a pipeline.
  std::vector<StageCall> stageCalls;
  llvm::SmallVector<ValueSource> resultSources;

  /// The ranks sharded values span (the tensor axis), and the pipeline's
  /// stages (one per rank of the pipeline axis).
  int64_t worldSize = 1;
  int64_t stageCount = 1;
  /// This process's rank on the tensor axis and on the pipeline axis, and
  /// the sizes of those axes in the grid in use.
  int64_t getTensorRank() const;
  int64_t getStageRank() const;
  int64_t getActiveStageCount() const;
  llvm::SmallVector<ArgumentSpec> inputs;
  llvm::SmallVector<ArgumentSpec> results;
  /// The arguments `<entry>_pack_weights` reads (any of them, unless
  /// known).
  llvm::SmallVector<int64_t> packSources;
  bool packSourcesKnown = false;
  int64_t packCount = 0;
  /// Weights packed by `<entry>_pack_weights`, passed after the inputs.
  llvm::SmallVector<ArgumentSpec> packedWeights;
};

} // namespace lamina
} // namespace mlir

#endif // LAMINA_EXECUTION_PROGRAM_H
