#!/usr/bin/env bash
# Runs the whole test suite: unit and op tests, CLI error checks, and the benchmark models end
# to end against PyTorch (needs ../shared/models/make_models.py; skipped with a message without it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
scripts/build.sh -DOSPREY_BUILD_TESTS=ON
cd build
ctest --output-on-failure --timeout 3000 "$@"
../scripts/test_python.sh   # the Python package in a fresh venv (pip install .), against ONNX Runtime
