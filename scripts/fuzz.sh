#!/bin/sh
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets with clang (build-fuzz/), makes their
# seed corpora and runs each target for SECONDS (default 60). Exits 3 on any finding
# (crash, sanitizer report, hang, out of memory) and prints where its reproducer was written;
# keep it under fuzz/regressions/<target>/ once fixed, so the ordinary test suite replays it.
# scripts/fuzz.sh --build TARGET...: configures the same tree and builds only TARGETs (the ASan
# job of scripts/sanitize.sh runs its tests in it: the library under ASan + UBSan, compiled once).
set -eu
cd "$(dirname "$0")/.."
build=${OSPREY_FUZZ_BUILD:-build-fuzz}
targets=${OSPREY_FUZZ_TARGETS:-"osp onnx npy tensor_proto tflite caffe tensorflow tensorflow_bundle vulkan_cache cuda_cache"}
start=$(date +%s)

configure_and_build() {  # targets...
  CC=clang CXX=clang++ cmake -S . -B "$build" -DOSPREY_FUZZ=ON -DOSPREY_CUDA=OFF -DOSPREY_OPENCL=OFF -DOSPREY_VULKAN=OFF \
    -DOSPREY_BUILD_TESTS=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" >/dev/null
  cmake --build "$build" -j"${OSPREY_FUZZ_JOBS:-2}" --target "$@" >"$build/build.log" 2>&1 || { tail -50 "$build/build.log"; return 1; }
}

if [ "${1:-}" = --build ]; then
  shift
  configure_and_build "$@"
  exit
fi
seconds=${1:-60}
configure_and_build osprey_cli $(for t in $targets; do echo "osprey_fuzz_$t"; done)
echo "fuzz: built in $(( $(date +%s) - start )) s"

# The converter runs under the sanitizers too: a model that crashes it is left out of the seeds.
ASAN_OPTIONS=detect_leaks=0 /usr/bin/python3 scripts/fuzz_corpus.py "$build/osprey" "$build/corpus"

export ASAN_OPTIONS=abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
for t in $targets; do
  name=osprey_fuzz_$t
  findings=$build/findings/$name
  # Targets fuzz_corpus.py makes no seeds for start from their kept reproducers alone.
  mkdir -p "$findings" "fuzz/regressions/$name" "$build/corpus/$name"
  # The first directory receives what the run adds; the kept reproducers seed it read-only.
  if "$build/fuzz/$name" "$build/corpus/$name" "fuzz/regressions/$name" -max_total_time="$seconds" \
      -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$findings/" -print_final_stats=1 \
      >"$build/$name.log" 2>&1; then
    echo "fuzz: $name clean, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/$name.log" | grep -o '[0-9]*$') runs in $seconds s"
  else
    failed=1
    echo "fuzz: $name FOUND a problem; log $build/$name.log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$build/$name.log" | head -n 5 || true
    grep -o "Test unit written to .*" "$build/$name.log" | sort -u || true
  fi
done
echo "fuzz: $(( $(date +%s) - start )) s end to end"
# 3 for findings, so that a caller can tell them from a failed build (any other status).
[ "$failed" = 0 ] || exit 3
