#!/usr/bin/env bash
# Runs a command as on an AVX2-only CPU: every process of it sees CPUID without AVX-512, AVX-VNNI
# and AMX (bench/cpuid_mask.c), so ONNX Runtime, OpenVINO, XNNPACK and Osprey all take their AVX2
# kernels. Needs CPUID faulting (`cpuid_fault` in /proc/cpuinfo: Intel CPUs, some VMs); exits 3
# without it rather than measure the real CPU.
#   bench/avx2_only.sh COMMAND [ARGS...]
set -euo pipefail
grep -qw cpuid_fault /proc/cpuinfo || { echo "avx2_only.sh: no cpuid_fault in /proc/cpuinfo" >&2; exit 3; }
lib=$(mktemp -d)/cpuid_mask.so
${CC:-cc} -O2 -shared -fPIC -o "$lib" "$(dirname "$0")/cpuid_mask.c"
CPUID_MASK_REQUIRED=1 LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" exec "$@"
