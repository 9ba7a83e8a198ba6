#!/bin/sh
# Compiles every OpenCL program with clang for each set of build options the backend can give it:
# fp32, fp16 storage (-DUSE_FP16) and half arithmetic (-DUSE_FP16 -DUSE_FP16_MATH), each with all
# argument slots in buffers, one slot at a time in an image, and all of them in images (-DIMGk,
# -DUSE_IMAGE, as OpenCLBackend::optionsFor appends them). No device available to the project has
# cl_khr_fp16, so this is the check that the half path builds at all.
#   check_cl_half_compile.sh CL_DIR    (src/backends/opencl/cl)
# Exits 77 (skipped) when clang is not installed.
set -u
cl_dir=${1:?usage: check_cl_half_compile.sh CL_DIR}
clang=${CLANG:-clang}
if ! command -v "$clang" >/dev/null 2>&1; then
  echo "SKIP: $clang not found (install clang to compile-check the OpenCL kernels)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
checked=0
failed=0
for program in "$cl_dir"/*.cl; do
  name=$(basename "$program" .cl)
  [ "$name" = common ] && continue
  # The runtime's assembly (fullSource in cl_runtime.cpp): common.cl, a newline, the program.
  { cat "$cl_dir/common.cl"; echo; cat "$program"; } >"$work/$name.cl"
  # Argument slots the program declares: IN(k) / OUT(k), k = 0 .. slots - 1.
  slots=$(grep -o -E '(IN|OUT)\([0-9]\)' "$program" | tr -dc '0-9\n' | sort -n | tail -1)
  slots=$((${slots:--1} + 1))
  image_sets="none"
  k=0
  all=""
  while [ $k -lt $slots ]; do
    image_sets="$image_sets $k"
    all="$all${all:+,}$k"
    k=$((k + 1))
  done
  [ $slots -gt 1 ] && image_sets="$image_sets $all"
  for precision in "" "-DUSE_FP16" "-DUSE_FP16 -DUSE_FP16_MATH"; do
    # clang 14 supports cl_khr_fp16 on its default target but rejects half arithmetic unless the
    # program enables it (common.cl does so only with USE_FP16_MATH): the fp32 and storage-only
    # builds are thereby checked to need no extension.
    ext=""
    case "$precision" in *USE_FP16_MATH*) ext="-Xclang -cl-ext=+cl_khr_fp16" ;; esac
    for set in $image_sets; do
      options=$precision
      if [ "$set" != none ]; then
        for k in $(echo "$set" | tr ',' ' '); do options="$options -DIMG$k"; done
        options="$options -DUSE_IMAGE"
      fi
      checked=$((checked + 1))
      # shellcheck disable=SC2086  # options and ext are word lists
      if ! "$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header $ext -fsyntax-only -Werror \
          $options "$work/$name.cl" 2>"$work/log"; then
        failed=$((failed + 1))
        echo "FAIL: $name.cl with '$options'"
        head -n 20 "$work/log"
      fi
    done
  done
done
echo "$checked program builds checked, $failed failed"
[ $checked -gt 0 ] && [ $failed -eq 0 ]
