#!/bin/sh
# ctest wrapper: run_conformance.sh OSPREY_CONFORMANCE SHARED_DIR [runner options...]
# Runs the ONNX node and model tests from SHARED_DIR; without them, the backend test data bundled
# with the onnx Python package; without that, reports SKIPPED (exit 77).
set -u
bin=$1
shared=$2
shift 2

if [ -d "$shared/onnx-node-tests" ]; then
  set -- "$@" "$shared/onnx-node-tests"
  for d in pytorch-converted pytorch-operator simple; do
    [ -d "$shared/onnx-model-tests/$d" ] && set -- "$@" "$shared/onnx-model-tests/$d"
  done
  exec "$bin" "$@"
fi

python=${OSPREY_PYTHON:-python3}
onnx_dir=$("$python" -c 'import onnx, os; print(os.path.dirname(onnx.__file__))' 2>/dev/null)
data=${onnx_dir:+$onnx_dir/backend/test/data}
if [ -z "$data" ] || [ ! -d "$data/node" ]; then
  echo "SKIPPED: no ONNX backend test data: '$shared/onnx-node-tests' is absent and the onnx Python package" \
       "($python) is not installed or carries no backend/test/data/node"
  exit 77
fi

# Present the package's folders under the names expected_failures.txt uses. Its onnx version may
# hold cases the list was not made for, so only crashes and timeouts of unlisted cases fail here.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
ln -s "$data/node" "$tmp/onnx-node-tests"
set -- "$@" --fail-on crashes "$tmp/onnx-node-tests"
for d in pytorch-converted pytorch-operator simple; do
  if [ -d "$data/$d" ]; then
    ln -s "$data/$d" "$tmp/$d"
    set -- "$@" "$tmp/$d"
  fi
done
echo "note: using the onnx package's test data in $data (unlisted non-crash failures only reported)"
"$bin" "$@"
