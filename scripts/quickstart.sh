#!/usr/bin/env bash
# Sets up, builds, and runs Osprey's main job on the bundled default model: convert the ONNX
# model, run it, print its outputs and latency.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DOSPREY_BUILD_TESTS=OFF
mkdir -p build/default-model
/usr/bin/python3 scripts/make_default_model.py build/default-model >/dev/null
model=build/default-model/tiny_classifier
build/osprey convert "$model.onnx" "$model.osp"
build/osprey run "$model.osp" --input "input=$model.input.npy" --loops 50 --threads 2
