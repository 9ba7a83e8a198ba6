#!/usr/bin/env bash
# The OpenCL backend on one chosen platform: its op tests, the six CNNs against PyTorch with no
# op falling back to the CPU, and the latency of resnet50 and mobilenet_v2 at batch 1 and 32
# next to PyTorch eager fp32 on the same machine.
#
#   bench/opencl_device.sh BUILD_DIR MODELS_DIR [PLATFORM]
#
# BUILD_DIR holds osprey and tests/osprey_opencl_tests (configure with the OpenCL backend on);
# MODELS_DIR the models of make_models.py (*.onnx, *.input.npy, *.ref.npy). PLATFORM picks the
# OpenCL platform by index or name substring (e.g. "NVIDIA"; default: the first GPU). Environment: PYTHON (with numpy, torch, torchvision, onnx; default
# python3), LOOPS (default 20), WARMUP (default 5), PRECISION (normal or low; default normal),
# STAGES (default "tests models bench"), MAKE_MODELS (make_models.py, to make missing models), CASES (MODEL:BATCH list for the latency table).
set -u
if [ $# -lt 2 ]; then
  sed -n '2,13p' "$0"
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$1" && pwd)
MODELS=$(cd "$2" && pwd)
PLATFORM=${3:-}
PYTHON=${PYTHON:-python3}
PRECISION=${PRECISION:-normal}
STAGES=${STAGES:-tests models bench}
# Program binaries and tuned work sizes survive between the processes below (the op tests read
# OSPREY_OPENCL_CACHE and OSPREY_OPENCL_PLATFORM; the CLI takes flags, added by a wrapper).
CACHE=$BUILD/opencl-device-cache.bin
export OSPREY_OPENCL_CACHE=$CACHE
[ -n "$PLATFORM" ] && export OSPREY_OPENCL_PLATFORM="$PLATFORM"
# Local work sizes are searched once per (kernel, global size) and kept in that cache.
OPENCL_FLAGS="--opencl-cache $(printf %q "$CACHE") --opencl-tune fast"
[ -n "$PLATFORM" ] && OPENCL_FLAGS="$OPENCL_FLAGS --opencl-platform $(printf %q "$PLATFORM")"
OSPREY="${TMPDIR:-/tmp}/osprey-opencl-device-$$"
cat > "$OSPREY" <<EOF
#!/usr/bin/env bash
case "\$1" in run|bench) exec $(printf %q "$BUILD/osprey") "\$@" $OPENCL_FLAGS ;; *) exec $(printf %q "$BUILD/osprey") "\$@" ;; esac
EOF
chmod +x "$OSPREY"
trap 'rm -f "$OSPREY"' EXIT
want() { [[ " $STAGES " == *" $1 "* ]]; }
status=0

# Missing CNNs are made with MAKE_MODELS (the path of make_models.py), when given.
need=""
for m in mobilenet_v2 resnet18 resnet50 squeezenet1_1 shufflenet_v2_x1_0 efficientnet_b0; do
  [ -f "$MODELS/$m.ref.npy" ] || need="$need${need:+,}$m"
done
if [ -n "$need" ] && [ -n "${MAKE_MODELS:-}" ]; then
  echo "== making $need into $MODELS"
  "$PYTHON" "$MAKE_MODELS" "$MODELS" --only "$need" > "$MODELS/make_models.log" 2>&1 || { tail -20 "$MODELS/make_models.log"; exit 1; }
  # Newer PyTorch exporters keep weights in NAME.onnx.data; the converter reads one file.
  "$PYTHON" - "$MODELS" <<'PY'
import glob, os, sys
import onnx
for path in glob.glob(os.path.join(sys.argv[1], "*.onnx")):
    if os.path.exists(path + ".data"):
        onnx.save_model(onnx.load(path), path, save_as_external_data=False)
        os.remove(path + ".data")
PY
fi

echo "== OpenCL devices (chosen: platform '${PLATFORM:-first GPU}')"
"$BUILD/osprey" backends | sed -n '/^opencl/,/^[a-z]/p'

if want tests; then
  echo "== OpenCL op tests"
  "$BUILD/tests/osprey_opencl_tests" --gtest_brief=1 2>&1 | tail -30
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi

if want models; then
  echo "== CNN models vs PyTorch (--backend opencl, precision $PRECISION, no fallback)"
  OSPREY_BIN="$OSPREY" OSPREY_MODELS_DIR="$MODELS" OSPREY_WORK_DIR="${TMPDIR:-/tmp}/osprey-opencl-models" \
    "$PYTHON" "$ROOT/tests/models/check_models.py" --backend opencl --precision "$PRECISION" --models cnn --no-fallback ||
    status=1
fi

if want bench; then
  echo "== Latency: osprey opencl vs PyTorch eager fp32"
  "$PYTHON" "$ROOT/bench/opencl/opencl_vs_torch.py" --osprey "$OSPREY" --loops "${LOOPS:-20}" \
    --warmup "${WARMUP:-5}" --precision "$PRECISION" --cases "${CASES:-resnet50:1,resnet50:32,mobilenet_v2:1,mobilenet_v2:32}" ||
    status=1
fi
exit $status
