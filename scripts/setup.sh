#!/usr/bin/env bash
# Installs what Osprey needs on Debian 12 / Ubuntu 24.04 from the distribution's packages.
#   scripts/setup.sh          build tools and the Python used by the default-model script
#   scripts/setup.sh --tests  also GoogleTest and PyTorch (the end-to-end tests compare with it)
set -euo pipefail
packages=(cmake g++ make flatbuffers-compiler libflatbuffers-dev python3 python3-numpy python3-onnx)
# The OpenCL backend builds against the ICD loader; PoCL runs its kernels on the CPU in tests.
packages+=(ocl-icd-opencl-dev opencl-headers)
# The Vulkan backend builds against the Vulkan loader, its shaders compiled by glslc.
packages+=(libvulkan-dev glslc)
if [[ "${1:-}" == "--tests" ]]; then
  # clang compile-checks the OpenCL kernels, half arithmetic included (tests/opencl).
  packages+=(libgtest-dev python3-torch python3-torchvision pocl-opencl-icd clang)
  # lavapipe (a Vulkan driver on the CPU) runs the Vulkan tests without a GPU.
  packages+=(mesa-vulkan-drivers)
  # protoc compiles python/tests/caffe.proto for the Caffe model generator (caffe_models.py).
  packages+=(protobuf-compiler)
  # scripts/test_python.sh builds the package for Debian's Python, in a venv.
  packages+=(python3-dev python3-venv)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
