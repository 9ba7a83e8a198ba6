// Fused scaled-dot-product attention, softmax(scale * Q K^T + mask) V, in one kernel: scores and
// probabilities stay on chip (an online softmax over key chunks held in shared memory), so no
// (batch, heads, Sq, T) tensor is ever written. Math in float for every storage type.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/math/kernel_types.h"

namespace osprey::cuda_math {

enum class MaskKind : int { None = 0, Additive = 1, Bool = 2 };

struct AttentionParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  const void* mask = nullptr;  // Additive: the storage type; Bool: one byte per element
  int batch = 0, qHeads = 0, kvHeads = 0, qSeq = 0, kvSeq = 0, dim = 0, vDim = 0;
  // Element strides of (batch, head, sequence); the channel stride is 1.
  int64_t qStride[3] = {0, 0, 0}, kStride[3] = {0, 0, 0}, vStride[3] = {0, 0, 0}, oStride[3] = {0, 0, 0};
  MaskKind maskKind = MaskKind::None;
  int64_t maskStride[4] = {0, 0, 0, 0};  // (batch, head, query, key); 0 broadcasts
  int maskLength = 0;                    // keys at or past it are hidden
  float scale = 1.f;
  bool causal = false;
};

// Largest head size (of Q/K and of V) the kernel handles.
constexpr int kAttentionMaxHeadDim = 128;

// Runs the register-resident tensor-core kernel (attention_flash.cu) where it applies, else the
// WMMA one (attention_tensor_core.cu), else the float one.
cudaError_t launchAttention(cudaStream_t stream, ElementType type, const AttentionParams& p);

// The register-resident kernel: half / bfloat16, Q/K and V head sizes equal and 32, 64, 96 or
// 128, 16-byte aligned rows.
bool attentionFlashEligible(ElementType type, const AttentionParams& p);
cudaError_t launchAttentionFlash(cudaStream_t stream, ElementType type, const AttentionParams& p);

// The tensor-core kernel: half / bfloat16, head sizes a multiple of 16, 16-byte aligned rows.
bool attentionTensorCoreEligible(ElementType type, const AttentionParams& p);
cudaError_t launchAttentionTensorCore(cudaStream_t stream, ElementType type, const AttentionParams& p);

}  // namespace osprey::cuda_math
