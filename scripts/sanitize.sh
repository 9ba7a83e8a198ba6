#!/usr/bin/env bash
# Sanitizer jobs (CPU backend only); any report aborts its process and so fails the job:
#   asan  ASan + UBSan over the unit and op tests, the CLI error checks and the models end to end
#         through the sanitized CLI: clang, in the fuzz targets' tree (build-fuzz/, made by
#         scripts/fuzz.sh --build), so that scripts/test.sh compiles the sanitized library once
#   tsan  TSan (gcc) over the concurrency tests, a binary of their own (build-tsan/)
# scripts/sanitize.sh [asan] [tsan] runs those named, both by default. OSPREY_MODELS_DIR
# reuses models that make_models.py already made (test.sh passes build/model-check/models).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1

failed=0
phase() {  # name, command...: runs it, prints its wall time and remembers a failure
  local start=$SECONDS name=$1 status=0
  shift
  "$@" || status=$?
  echo "== $name: $((SECONDS - start)) s$( ((status == 0)) || echo ", FAILED (exit $status)")"
  ((status == 0)) || failed=1
  return $status
}

build() {  # dir, -fsanitize flags, targets...
  local dir=$1 flags="$2 -fno-omit-frame-pointer -O1 -g"
  shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DOSPREY_CUDA=OFF -DOSPREY_OPENCL=OFF -DOSPREY_VULKAN=OFF -DOSPREY_BUILD_TESTS=ON >/dev/null
  cmake --build "$dir" -j 2 --target "$@" >"$dir/build.log" 2>&1 || { tail -50 "$dir/build.log"; return 1; }
}

gtests() {  # log, binary, gtest arguments...: the log's tail (the sanitizer's report) on failure
  local log=$1
  shift
  "$@" >"$log" 2>&1 || { tail -80 "$log"; return 1; }
}

logged() {  # log, command...: the command's output, also kept in log
  "${@:2}" 2>&1 | tee "$1"
}

asan() {
  local dir=${OSPREY_FUZZ_BUILD:-build-fuzz}
  local bin=$root/$dir/osprey log=$dir/asan
  phase "asan build" scripts/fuzz.sh --build osprey_tests osprey_concurrency_tests osprey_cli
  phase "asan osprey_tests" gtests $log-gtest.log $dir/tests/osprey_tests || true
  phase "asan concurrency tests" gtests $log-concurrency.log $dir/tests/osprey_concurrency_tests || true
  phase "asan cli errors" logged $log-cli.log env OSPREY_BIN="$bin" \
    /usr/bin/python3 tests/models/check_cli_errors.py || true
  phase "asan models" logged $log-models.log env OSPREY_BIN="$bin" \
    OSPREY_WORK_DIR="$root/$dir/model-check" /usr/bin/python3 tests/models/check_models.py || true
  gtestCounts asan_unit_op_tests $log-gtest.log
  gtestCounts asan_concurrency_tests $log-concurrency.log
  echo "asan_cli_errors: $(grep -c '^ok ' $log-cli.log) passed, $(grep -c '^FAIL ' $log-cli.log) failed"
  sed -n '/^model /,$p' $log-models.log >$log-models.rows
  echo "asan_models: $(grep -cE '^\S+ +(ok|expected) ' $log-models.rows) passed," \
    "$(grep -cE '^\S+ +(MISMATCH|UNEXPECTED|convert failed|run failed|shape) ' $log-models.rows) failed"
}

tsan() {
  phase "tsan build" build build-tsan "-fsanitize=thread" osprey_concurrency_tests
  phase "tsan concurrency tests" gtests build-tsan/gtest.log build-tsan/tests/osprey_concurrency_tests || true
  gtestCounts tsan_concurrency_tests build-tsan/gtest.log
}

gtestCounts() {  # job name, gtest log
  local ran passed skipped
  ran=$(grep -oP '^\[==========\] \K[0-9]+(?= tests? from .* ran)' "$2") || { echo "$1: aborted"; return; }
  passed=$(grep -oP '^\[  PASSED  \] \K[0-9]+' "$2" || echo 0)
  skipped=$(grep -oP '^\[  SKIPPED \] \K[0-9]+' "$2" || echo 0)
  echo "$1: $passed passed, $((ran - passed - skipped)) failed, $skipped skipped"
}

jobs=("$@")
((${#jobs[@]})) || jobs=(asan tsan)
for job in "${jobs[@]}"; do
  case $job in
    asan|tsan) $job ;;
    *) echo "unknown job $job (asan, tsan)" >&2; exit 2 ;;
  esac
done
exit $failed
