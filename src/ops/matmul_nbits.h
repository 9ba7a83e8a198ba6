// MatMulNBits' int8 arithmetic (accuracy_level 4 on 4-bit weights), shared by the reference
// kernel (matmul_nbits.cpp) and the CPU backend's, so that both round A the same way.
//
// Each row of A is cut into blocks of block_size along K (the weights' blocks) and each block is
// quantized symmetrically to int8: scale = max|a| / 127, q = round-half-even(a * (127 / max|a|))
// clamped to [-127, 127] (q = 0 and scale 0 for a block of zeros). Output (i, n) is then, block by
// block in order of k, y = fma(float(dot - zero_point * sum q) * scale_w, scale_a, y) with dot the
// integer sum of q * code, and finally y + bias through the fused activation. That is ONNX Runtime's
// CompInt8 scheme: the activations lose what 8 bits per 32 values lose, against what the 4-bit
// weights already lose (docs/quantization.md).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace osprey {

// True where MatMulNBits runs with int8 activations: accuracy_level 4 and 4-bit weights (8-bit
// codes times int8 activations overflow the AVX2 pair products; those stay float) in blocks
// whose integer sums fit int32.
inline bool nbitsUsesInt8Activations(int64_t accuracyLevel, int64_t bits, int64_t blockSize) {
  return accuracyLevel == 4 && bits == 4 && blockSize <= 65536;
}

// Quantizes a[0, n) as one block: q[0, n) and its scale and sum. NaN inputs give q = -127.
inline void nbitsQuantizeBlock(const float* a, int64_t n, int8_t* q, float* scale, int32_t* sum) {
  float amax = 0.f;
  for (int64_t k = 0; k < n; ++k) amax = std::max(amax, std::fabs(a[k]));
  const float inverse = amax > 0.f ? 127.f / amax : 0.f;
  int32_t s = 0;
  for (int64_t k = 0; k < n; ++k) {
    // max / min in this order take -127 for a NaN, as the vector kernels' max / min do.
    const float v = std::min(127.f, std::max(-127.f, a[k] * inverse));
    q[k] = static_cast<int8_t>(std::nearbyint(v));
    s += q[k];
  }
  *scale = amax / 127.f;
  *sum = s;
}

}  // namespace osprey
