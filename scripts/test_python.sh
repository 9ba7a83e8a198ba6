#!/usr/bin/env bash
# The Python package's tests: `pip install .` into a fresh virtual environment, then pytest on
# python/tests (single ops, the API and its errors, `python -m osprey`, and the make_models.py
# models, all against ONNX Runtime).
#   scripts/test_python.sh [pytest arguments]
# Models: $OSPREY_MODELS_DIR, else build/model-check/models (left by scripts/test.sh's ctest), else
# generated here with the system Python's torch (scripts/setup.sh --tests); skipped without any.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$python" -m venv "$work/venv" >/dev/null 2>&1; then
  # Debian's python3 needs python3-venv for venv's pip.
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "installing: python3-venv"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  rm -rf "$work/venv"
  "$python" -m venv "$work/venv"
fi
pip=("$work/venv/bin/python" -m pip)
"${pip[@]}" install -q pytest numpy onnx onnxruntime onnx-ir ai-edge-litert flatbuffers  # onnx-ir: ORT's MatMulNBits quantizer; ai-edge-litert, flatbuffers: the TFLite tests
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
OSPREY_MODELS_DIR="$models" "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests" "$@"

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
