// LD_PRELOAD library that makes a process tree see an AVX2-only x86 CPU (bench/avx2_only.sh):
// with CPUID faulting (Linux arch_prctl ARCH_SET_CPUID, where /proc/cpuinfo lists cpuid_fault)
// every CPUID instruction traps; the handler runs the real one and clears the AVX-512, AVX-VNNI
// and AMX bits before returning. Libraries pick their kernels from CPUID (ONNX Runtime's MLAS,
// oneDNN, XNNPACK's cpuinfo, Osprey's table), so the peers then run their AVX2 code, as on an
// AMD Zen 3. XGETBV is not trapped: the operating system's AVX-512 state stays enabled, which no
// library uses without the CPUID bits. Faulting is per thread, inherited by new threads and
// processes and reset by execve, where this library is loaded again.
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static void set_faulting(int on) { syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void on_fault(int sig, siginfo_t* info, void* context) {
  ucontext_t* uc = (ucontext_t*)context;
  const uint8_t* ip = (const uint8_t*)uc->uc_mcontext.gregs[REG_RIP];
  if (ip[0] != 0x0f || ip[1] != 0xa2) {  // a real fault: let it kill the process as it would have
    signal(sig, SIG_DFL);
    (void)info;
    return;
  }
  const uint32_t leaf = (uint32_t)uc->uc_mcontext.gregs[REG_RAX], sub = (uint32_t)uc->uc_mcontext.gregs[REG_RCX];
  uint32_t a, b, c, d;
  set_faulting(0);
  __cpuid_count(leaf, sub, a, b, c, d);
  set_faulting(1);
  if (leaf == 7 && sub == 0) {
    b &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) | (1u << 30) | (1u << 31));
    c &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    d &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  } else if (leaf == 7 && sub == 1) {
    a &= ~((1u << 4) | (1u << 5) | (1u << 23));  // AVX-VNNI, AVX512_BF16, AVX-IFMA
    d &= ~((1u << 4) | (1u << 5) | (1u << 10));  // AVX-VNNI-INT8, AVX-NE-CONVERT, AVX-VNNI-INT16
  } else if (leaf == 0xd && sub == 0) {
    a &= ~0xe0u;  // opmask and ZMM state among the supported XCR0 bits
  }
  uc->uc_mcontext.gregs[REG_RAX] = a;
  uc->uc_mcontext.gregs[REG_RBX] = b;
  uc->uc_mcontext.gregs[REG_RCX] = c;
  uc->uc_mcontext.gregs[REG_RDX] = d;
  uc->uc_mcontext.gregs[REG_RIP] += 2;
}

__attribute__((constructor)) static void mask_cpuid(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
    fprintf(stderr, "cpuid_mask: this CPU or kernel has no CPUID faulting; the process sees the real CPU\n");
    if (getenv("CPUID_MASK_REQUIRED")) _exit(3);
  }
}
