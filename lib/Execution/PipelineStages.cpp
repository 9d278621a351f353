//===- PipelineStages.cpp - Pipeline stages on MPI ranks -------------------===//
//
// A pipelined entry (lamina-split-pipeline-stages) on as many ranks as it
// has stages: rank i packs and runs stage i, receives the values earlier
// stages send it and sends what later stages need; the rank holding each
// result broadcasts it, so every rank returns the whole results. Run stage
// by stage (runStage), a rank returns what it computed or received, and its
// sends complete later: ranks may then run the stages of different calls
// in different orders (1F1B schedules).
//
//===----------------------------------------------------------------------===//

#include "lamina/Execution/Program.h"
#include "lamina/Runtime/MpiRuntime.h"

#include <map>
#include <set>

using namespace mlir;
using namespace mlir::lamina;
using llvm::createStringError;

/// `arg` as stage argument `spec` takes it: this rank's block of a sharded
/// argument given whole (tensor parallelism inside the stages).
HostTensor Program::stageArgument(const HostTensor &arg, size_t index,
                                  bool isBlock) const {
  const ArgumentSpec &spec = inputs[index];
  if (spec.shardAxis && !isBlock && worldSize > 1)
    return arg.getBlock(*spec.shardAxis, getTensorRank(), worldSize,
                        spec.shardGroups);
  return arg.clone();
}

llvm::Expected<Program::PreparedArguments>
Program::preparePipeline(llvm::ArrayRef<HostTensor> args,
                         llvm::ArrayRef<bool> isBlock) {
  PreparedArguments prepared;
  int64_t rank = getStageRank();
  for (const StageCall &stage : stageCalls) {
    std::vector<HostTensor> stageArgs;
    if (stage.rank != rank) {
      prepared.stageArguments.push_back(std::move(stageArgs));
      continue;
    }
    // The entry's arguments now; other stages' values arrive at run time
    // (packing reads weights only).
    for (auto [source, spec] : llvm::zip_equal(stage.operands, stage.inputs)) {
      if (source.call < 0) {
        stageArgs.push_back(stageArgument(args[source.index], source.index,
                                          isBlock[source.index]));
        continue;
      }
      llvm::Expected<HostTensor> slot = HostTensor::zeros(spec.kind, spec.shape);
      if (!slot)
        return slot.takeError();
      stageArgs.push_back(std::move(*slot));
    }
    if (llvm::Error error = packStage(stage, stageArgs))
      return std::move(error);
    prepared.stageArguments.push_back(std::move(stageArgs));
  }
  return prepared;
}

llvm::Error Program::packStage(const StageCall &stage,
                               std::vector<HostTensor> &stageArgs) {
  stageArgs.resize(stage.inputs.size());
  std::vector<HostTensor> packed;
  for (const ArgumentSpec &spec : stage.packedWeights) {
    llvm::Expected<HostTensor> weight =
        HostTensor::zeros(spec.kind, spec.shape);
    if (!weight)
      return weight.takeError();
    packed.push_back(std::move(*weight));
  }
  if (!packed.empty())
    if (llvm::Error error = invoke(stage.function + "_pack_weights",
                                   stageArgs, stage.inputs, packed))
      return error;
  for (HostTensor &weight : packed)
    stageArgs.push_back(std::move(weight));
  return llvm::Error::success();
}

llvm::Error
Program::updatePipeline(PreparedArguments &prepared,
                        std::vector<std::pair<size_t, HostTensor>> args,
                        llvm::ArrayRef<bool> isBlock) {
  int64_t rank = getStageRank();
  for (auto [callIndex, stage] : llvm::enumerate(stageCalls)) {
    if (stage.rank != rank)
      continue;
    std::vector<HostTensor> &stageArgs = prepared.stageArguments[callIndex];
    bool repack = false;
    for (auto [position, source] : llvm::enumerate(stage.operands)) {
      if (source.call >= 0)
        continue;
      for (auto [given, block] : llvm::zip_equal(args, isBlock)) {
        auto &[index, arg] = given;
        if (int64_t(index) != source.index)
          continue;
        stageArgs[position] = stageArgument(arg, index, block);
        repack |= !stage.packSourcesKnown ||
                  llvm::is_contained(stage.packSources, int64_t(position));
      }
    }
    if (repack && !stage.packedWeights.empty())
      if (llvm::Error error = packStage(stage, stageArgs))
        return error;
  }
  return llvm::Error::success();
}

/// The message tag of result `index` of stage call `call`.
static int64_t messageTag(int64_t call, int64_t index) {
  return call * 1024 + index;
}

llvm::Expected<std::vector<std::optional<HostTensor>>>
Program::runPipeline(const PreparedArguments &args, bool stageLocal) {
  int64_t rank = getStageRank();
  // Values this rank computed or received, by (call, result index).
  std::map<std::pair<int64_t, int64_t>, HostTensor> values;
  for (auto [callIndex, stage] : llvm::enumerate(stageCalls)) {
    if (stage.rank != rank)
      continue;
    std::vector<HostTensor> stageArgs;
    for (const HostTensor &arg : args.stageArguments[callIndex])
      stageArgs.push_back(arg.view());
    for (auto [operand, source] : llvm::enumerate(stage.operands)) {
      if (source.call < 0)
        continue;
      auto key = std::make_pair(source.call, source.index);
      if (!values.count(key)) {
        HostTensor &slot = stageArgs[operand];
        mpiRecvBytes(slot.bytes.data(), slot.bytes.size(),
                     stageCalls[source.call].rank,
                     messageTag(source.call, source.index));
        values[key] = slot.view();
      }
      stageArgs[operand] = values[key].view();
    }
    std::vector<HostTensor> outputs;
    for (const ArgumentSpec &spec : stage.results) {
      llvm::Expected<HostTensor> output =
          HostTensor::zeros(spec.kind, spec.shape);
      if (!output)
        return output.takeError();
      outputs.push_back(std::move(*output));
    }
    SmallVector<ArgumentSpec> specs(stage.inputs);
    specs.append(stage.packedWeights.begin(), stage.packedWeights.end());
    if (llvm::Error error = invoke(stage.function, stageArgs, specs, outputs))
      return std::move(error);
    // Each result goes once to every other rank whose stage reads it.
    for (auto [index, output] : llvm::enumerate(outputs)) {
      std::set<int64_t> destinations;
      for (const StageCall &later : stageCalls)
        for (const ValueSource &source : later.operands)
          if (source.call == int64_t(callIndex) &&
              source.index == int64_t(index) && later.rank != rank)
            destinations.insert(later.rank);
      for (int64_t destination : destinations) {
        if (stageLocal)
          mpiSendBytesDeferred(output.bytes.data(), output.bytes.size(),
                               destination, messageTag(callIndex, index),
                               output.bytes.getOwner());
        else
          mpiSendBytes(output.bytes.data(), output.bytes.size(), destination,
                       messageTag(callIndex, index));
      }
      values[{int64_t(callIndex), int64_t(index)}] = std::move(output);
    }
  }
  // Stage by stage: the results this rank computed or received.
  std::vector<std::optional<HostTensor>> results;
  if (stageLocal) {
    for (const ValueSource &source : resultSources) {
      auto found = values.find({source.call, source.index});
      if (found == values.end())
        results.push_back(std::nullopt);
      else if (stageCalls[source.call].rank == rank)
        results.push_back(found->second.view());
      else // received into a prepared argument, which the next call reuses
        results.push_back(found->second.clone());
    }
    return results;
  }
  // Every rank returns the whole results, broadcast by the rank holding
  // each.
  for (auto [source, spec] : llvm::zip_equal(resultSources, this->results)) {
    llvm::Expected<HostTensor> allocated =
        HostTensor::zeros(spec.kind, getLocalShape(spec));
    if (!allocated)
      return allocated.takeError();
    HostTensor result = std::move(*allocated);
    int64_t owner = source.call < 0 ? 0 : stageCalls[source.call].rank;
    if (owner == rank)
      result = source.call < 0 ? HostTensor()
                               : std::move(values[{source.call, source.index}]);
    if (source.call < 0)
      return createStringError(std::errc::not_supported,
                               "a pipelined entry returns one of its "
                               "arguments unchanged");
    mpiAxisBroadcast(result.bytes.data(), result.bytes.size(), owner,
                     MpiAxis::Pipeline);
    results.push_back(std::move(result));
  }
  return results;
}

std::vector<int64_t> Program::getResultStages() const {
  std::vector<int64_t> stages;
  for (const ValueSource &source : resultSources)
    stages.push_back(source.call < 0 ? -1 : stageCalls[source.call].rank);
  if (stageCalls.empty())
    stages.assign(results.size(), -1);
  return stages;
}
