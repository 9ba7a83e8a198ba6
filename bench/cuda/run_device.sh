#!/usr/bin/env bash
# On a GPU machine without flatc / GoogleTest installed: configure with the prepared .devdeps,
# build the CLI and the CUDA tests, run the tests, make the benchmark models and check them
# against PyTorch on --backend cuda in fp32 and with --precision low. Logs go to $OUT.
#
#   bench/cuda/run_device.sh [STAGE...]     stages: build tests models check all (default: all),
#                                           and, only when named, quickbench and bench
#
# Environment: OUT (log folder, default /tmp/osprey-device-out), BUILD (default /tmp/b),
# MODELS (default /tmp/models), JOBS (default: all cores), OSPREY_BERT_LAYERS (default 2),
# CHECK_PRECISIONS (default "normal low").
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/osprey-device-out}
BUILD=${BUILD:-/tmp/b}
MODELS=${MODELS:-/tmp/models}
JOBS=${JOBS:-$(nproc)}
DEPS=$ROOT/.devdeps
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT"
stages=${*:-all}
want() { [[ " $stages " == *" $1 "* || " $stages " == *" all "* ]]; }
status=0

if want build; then
  # The tree arrives with this machine's clock possibly behind the build's: touch every source
  # whose content changed since the last build here, so make never keeps a stale object.
  sums=$BUILD/.source-sums
  fresh=$(mktemp)
  (cd "$ROOT" && find src tests tools include schema examples -type f -print0 | xargs -0 md5sum | sort -k2) > "$fresh"
  if [ -f "$sums" ]; then
    (cd "$ROOT" && diff "$sums" "$fresh" | awk '/^> /{print $3}' | xargs -r touch)
  fi
  {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DFLATC_EXECUTABLE="$DEPS/bin/flatc" -DFLATBUFFERS_INCLUDE_DIR="$DEPS/include" \
      -DGTEST_ROOT="$DEPS" -DGTEST_INCLUDE_DIR="$DEPS/include" \
      -DGTEST_LIBRARY="$DEPS/lib/libgtest.a" -DGTEST_MAIN_LIBRARY="$DEPS/lib/libgtest_main.a" \
      -DGMOCK_LIBRARY="$DEPS/lib/libgmock.a" -DGMOCK_MAIN_LIBRARY="$DEPS/lib/libgmock_main.a" &&
      cmake --build "$BUILD" -j "$JOBS" --target osprey_cli osprey_cuda_tests
  } > "$OUT/build.log" 2>&1 || { status=1; echo "build failed (see build.log)"; tail -40 "$OUT/build.log"; exit 1; }
  mv "$fresh" "$sums"
  echo "build ok"
fi

if want tests; then
  # One process per suite, so a crash names its suite and the others still run.
  : > "$OUT/cuda_tests.log"
  for suite in $("$BUILD/tests/osprey_cuda_tests" --gtest_list_tests | grep -v '^ ' | tr -d '.'); do
    stdbuf -oL -eL "$BUILD/tests/osprey_cuda_tests" --gtest_filter="$suite.*" >> "$OUT/cuda_tests.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || { status=1; echo "suite $suite: exit $rc" | tee -a "$OUT/cuda_tests.log"; }
  done
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|exit " "$OUT/cuda_tests.log" | head -60
fi

if want models; then
  layers=${OSPREY_BERT_LAYERS:-2}
  need=""
  for m in mobilenet_v2 resnet18 resnet50 squeezenet1_1 shufflenet_v2_x1_0 efficientnet_b0 bert_base_l${layers}_seq128 vit_tiny_p16_224; do
    [ -f "$MODELS/$m.ref.npy" ] || need="$need${need:+,}$m"
  done
  if [ -n "$need" ]; then
    python3 "$DEPS/models/make_models.py" "$MODELS" --only "$need" --bert-layers "$layers" > "$OUT/models.log" 2>&1 ||
      { status=1; tail -20 "$OUT/models.log"; }
  fi
  # Newer PyTorch exporters keep weights in NAME.onnx.data; the converter wants them inline.
  python3 - "$MODELS" <<'PY'
import glob, os, sys
import onnx
for path in glob.glob(os.path.join(sys.argv[1], "*.onnx")):
    if os.path.exists(path + ".data"):
        model = onnx.load(path)
        onnx.save_model(model, path, save_as_external_data=False)
        os.remove(path + ".data")
PY
  ls "$MODELS" | tr '\n' ' '; echo
fi

if want check; then
  for precision in ${CHECK_PRECISIONS:-normal low}; do
    OSPREY_BIN="$BUILD/osprey" OSPREY_MODELS_DIR="$MODELS" OSPREY_WORK_DIR="/tmp/check-$precision" \
      OSPREY_BACKEND=cuda OSPREY_PRECISION=$precision \
      python3 "$ROOT/tests/models/check_models.py" > "$OUT/check_$precision.log" 2>&1 || status=1
    cat "$OUT/check_$precision.log"
  done
fi
# Not part of "all": quick latencies of the CLI alone (graph replay on and off), and the side-by-side
# comparison with PyTorch (bench/cuda/compare_torch.py).
if [[ " $stages " == *" quickbench "* ]]; then
  for model in resnet50 bert_base_l${OSPREY_BERT_LAYERS:-2}_seq128; do
    for graph in on off; do
      echo "$model fp32 bs1, --cuda-graphs $graph"
      "$BUILD/osprey" bench "$MODELS/$model.onnx" --backend cuda --cuda-graphs $graph --warmup 5 --loops 30 | tail -2
    done
  done 2>&1 | tee "$OUT/quickbench.log"
fi
if [[ " $stages " == *" bench "* ]]; then
  python3 "$ROOT/bench/cuda/compare_torch.py" --osprey "$BUILD/osprey" --make-models "$DEPS/models/make_models.py" \
    > "$OUT/bench.log" 2>&1 || status=1
  cat "$OUT/bench.log"
fi
exit $status
