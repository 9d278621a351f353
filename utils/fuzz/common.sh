# What run-fuzzers.sh and campaign.sh share; sourced, after `cd` to the
# repository root.

# Every fuzzer, as lamina-NAME-fuzzer names it.
all_fuzzers=(parse decompose partition cpu lns gpu backward schedule npy run-args)

# MPICH's UCX patches mmap at load time, which ASan's interceptor forbids.
export UCX_MEM_MMAP_HOOK_MODE=none

# The dictionary option of fuzzer $1: the IR harnesses take the IR tokens.
dictionary_option() {
  case $1 in
    npy | run-args) ;;
    *) echo "-dict=test/fuzz/mlir.dict" ;;
  esac
}
