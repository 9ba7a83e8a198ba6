// ONNX Runtime's com.microsoft MatMulNBits: A (float32 [..., K]) times a weight matrix stored
// block-quantized along K to 4 or 8 bits (what onnxruntime.quantization's MatMulNBitsQuantizer
// writes). B is uint8 [N, k_blocks, blob_size], k_blocks = ceil(K / block_size), blob_size =
// block_size * bits / 8: column n's codes along K, block by block, 4-bit codes two to a byte,
// the lower nibble first. Each block has a scale (scales: float32 [N * k_blocks] or
// [N, k_blocks]) and a zero point (zero_points: uint8 packed as B, [N * ceil(k_blocks * bits /
// 8)] or [N, ...]; absent: 2^(bits - 1), 8 or 128). W[k][n] = (code - zero_point) * scale and
// Y = A x W + bias ([N], optional), Y of shape [..., N]; with Osprey's `activation` attribute
// (ops/activation.h: what the weight-only quantizer keeps of a MatMul's fused activation) Y is
// act(A x W + bias).
//
// Not supported, each refused with an error naming the op: bits other than 4 and 8, A other
// than float32, zero points in A's type (ORT's unpacked form), a g_idx other than the trivial
// k / block_size (the input is deprecated), weight_prepacked. accuracy_level 4 with 4-bit weights
// quantizes A to int8 block by block (ONNX Runtime's CompInt8; ops/matmul_nbits.h defines it);
// every other level and 8-bit weights compute in float32 (ORT's level 0 / 1).
//
// The reference dequantizes one column of W at a time (no float copy of the whole matrix) and
// sums in float32 in order of k; the CPU backend's kernel is kernels/matmul_nbits.cpp.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/activation.h"
#include "ops/matmul_nbits.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

struct NBits {
  int64_t K = 0, N = 0, bits = 4, blockSize = 0;
  int64_t kBlocks = 0, blobSize = 0, zeroRow = 0;  // zeroRow: bytes of packed zero points per column
  int64_t M = 0;                                   // rows of A: its elements / K
  Shape out;
  FusedActivation act;  // Osprey's fused activation (the weight-only quantizer keeps a MatMul's)
};

std::string dims(const Shape& s) { return shapeToString(s); }

Status err(const std::string& m) { return Status::invalidModel("MatMulNBits: " + m); }
Status unsupported(const std::string& m) { return Status::unsupported("MatMulNBits: " + m); }

// The product a * b, false when it overflows int64.
bool mul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// `t` is [rows * cols] or [rows, cols].
bool isMatrixOf(const TensorView& t, int64_t rows, int64_t cols) {
  int64_t n = 0;
  if (!mul(rows, cols, &n)) return false;
  return t.shape == Shape{n} || t.shape == Shape{rows, cols};
}

Status attributes(const Node& node, NBits* s) {
  for (const char* name : {"K", "N", "block_size"})
    if (!node.hasAttr(name)) return err(std::string("the attribute ") + name + " is required");
  s->K = node.getInt("K", 0);
  s->N = node.getInt("N", 0);
  s->bits = node.getInt("bits", 4);
  s->blockSize = node.getInt("block_size", 0);
  if (s->K < 1 || s->N < 1)
    return err("K " + std::to_string(s->K) + " and N " + std::to_string(s->N) + " must be positive");
  if (s->bits != 4 && s->bits != 8)
    return unsupported("bits " + std::to_string(s->bits) + " is not supported (Osprey runs 4 and 8)");
  const int64_t bs = s->blockSize;
  if (bs < 16 || (bs & (bs - 1)) != 0 || bs > (int64_t{1} << 40))
    return err("block_size " + std::to_string(bs) + " must be a power of 2, at least 16");
  if (node.getInt("weight_prepacked", 0) != 0)
    return unsupported("weight_prepacked " + std::to_string(node.getInt("weight_prepacked", 0)) +
                       " (a backend's own layout) is not supported");
  s->kBlocks = s->K / bs + (s->K % bs != 0);
  s->blobSize = bs * s->bits / 8;
  s->zeroRow = s->bits == 8 ? s->kBlocks : (s->kBlocks + 1) / 2;
  return FusedActivation::fromNode(node, &s->act);
}

Status setup(const Node& node, const TensorViews& in, NBits* s) {
  OSPREY_RETURN_IF_ERROR(attributes(node, s));
  const TensorView &a = in[0], &b = in[1], &scales = in[2];
  if (a.dtype != DataType::Float32)
    return unsupported(std::string("A has dtype ") + dataTypeName(a.dtype) + "; Osprey runs float32 A only");
  if (a.rank() < 1 || a.shape.back() != s->K)
    return err("A " + dims(a.shape) + " must end in K (" + std::to_string(s->K) + ")");
  if (b.dtype != DataType::UInt8) return err(std::string("B has dtype ") + dataTypeName(b.dtype) + "; expected uint8");
  int64_t bytes = 0;
  const Shape expectB = {s->N, s->kBlocks, s->blobSize};
  if (!mul(s->N, s->kBlocks, &bytes) || !mul(bytes, s->blobSize, &bytes) || b.shape != expectB)
    return err("B " + dims(b.shape) + " must be [N, k_blocks, blob_size] = " + dims(expectB) + " for K " +
               std::to_string(s->K) + ", N " + std::to_string(s->N) + ", bits " + std::to_string(s->bits) +
               ", block_size " + std::to_string(s->blockSize));
  if (scales.dtype != DataType::Float32)
    return unsupported(std::string("scales has dtype ") + dataTypeName(scales.dtype) + "; expected float32");
  if (!isMatrixOf(scales, s->N, s->kBlocks))
    return err("scales " + dims(scales.shape) + " must be [N * k_blocks] or [N, k_blocks], N " + std::to_string(s->N) +
               ", k_blocks " + std::to_string(s->kBlocks));
  if (in.size() > 3 && in[3].present) {
    const TensorView& z = in[3];
    if (z.dtype == DataType::Float32 || z.dtype == DataType::Float16 || z.dtype == DataType::BFloat16)
      return unsupported(std::string("zero_points of dtype ") + dataTypeName(z.dtype) +
                         " (one unpacked value per block) are not supported; Osprey reads packed uint8 zero points");
    if (z.dtype != DataType::UInt8)
      return err(std::string("zero_points has dtype ") + dataTypeName(z.dtype) + "; expected uint8");
    if (!isMatrixOf(z, s->N, s->zeroRow))
      return err("zero_points " + dims(z.shape) + " must be [N * " + std::to_string(s->zeroRow) + "] or [N, " +
                 std::to_string(s->zeroRow) + "] (k_blocks " + std::to_string(s->kBlocks) + " packed at " +
                 std::to_string(s->bits) + " bits)");
  }
  if (in.size() > 4 && in[4].present) {
    const TensorView& g = in[4];
    if (g.dtype != DataType::Int32 || g.shape != Shape{s->K})
      return err("g_idx " + std::string(dataTypeName(g.dtype)) + " " + dims(g.shape) + " must be int32 [K] (K " +
                 std::to_string(s->K) + ")");
    if (g.data)
      for (int64_t k = 0; k < s->K; ++k)
        if (g.as<const int32_t>()[k] != k / s->blockSize)
          return unsupported("g_idx other than k / block_size (act-order GPTQ) is not supported: g_idx[" +
                             std::to_string(k) + "] is " + std::to_string(g.as<const int32_t>()[k]));
  }
  if (in.size() > 5 && in[5].present) {
    const TensorView& bias = in[5];
    if (bias.dtype != DataType::Float32 || bias.shape != Shape{s->N})
      return err("bias " + std::string(dataTypeName(bias.dtype)) + " " + dims(bias.shape) + " must be float32 [" +
                 std::to_string(s->N) + "]");
  }
  s->M = a.elements() / s->K;
  s->out = Shape(a.shape.begin(), a.shape.end() - 1);
  s->out.push_back(s->N);
  int64_t outElements = 0;
  if (!mul(s->M, s->N, &outElements)) return err("the output " + dims(s->out) + " is too large");
  return Status::ok();
}

Status nbitsShape(const Node& node, const TensorViews& in, TensorViews& out) {
  NBits s;
  OSPREY_RETURN_IF_ERROR(setup(node, in, &s));
  out[0] = {DataType::Float32, s.out};
  return Status::ok();
}

Status nbitsKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  NBits s;
  OSPREY_RETURN_IF_ERROR(setup(node, in, &s));  // g_idx's values are checked here when it was not constant
  const float* a = in[0].as<const float>();
  const uint8_t* b = in[1].as<const uint8_t>();
  const float* scales = in[2].as<const float>();
  const uint8_t* zeros = in.size() > 3 && in[3].present ? in[3].as<const uint8_t>() : nullptr;
  const float* bias = in.size() > 5 && in[5].present ? in[5].as<const float>() : nullptr;
  float* y = out[0].as<float>();
  const int64_t K = s.K, N = s.N, bs = s.blockSize;
  auto code = [&](int64_t n, int64_t k) -> int32_t {
    const uint8_t* blob = b + (n * s.kBlocks + k / bs) * s.blobSize;
    const int64_t i = k % bs;
    if (s.bits == 8) return blob[i];
    return i % 2 ? blob[i / 2] >> 4 : blob[i / 2] & 15;
  };
  auto zeroPoint = [&](int64_t n, int64_t block) -> int32_t {
    if (!zeros) return 1 << (s.bits - 1);
    const uint8_t* row = zeros + n * s.zeroRow;
    if (s.bits == 8) return row[block];
    return block % 2 ? row[block / 2] >> 4 : row[block / 2] & 15;
  };
  if (nbitsUsesInt8Activations(node.getInt("accuracy_level", 0), s.bits, bs)) {
    std::vector<int8_t> q(static_cast<size_t>(s.M * K));
    std::vector<float> rowScale(static_cast<size_t>(s.M * s.kBlocks));
    std::vector<int32_t> rowSum(rowScale.size());
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t blk = 0; blk < s.kBlocks; ++blk) {
        const int64_t k0 = blk * bs, n = std::min(bs, K - k0), at = i * s.kBlocks + blk;
        nbitsQuantizeBlock(a + i * K + k0, n, q.data() + i * K + k0, &rowScale[at], &rowSum[at]);
      }
    parallelFor(pool, N, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t i = 0; i < s.M; ++i) {
          float acc = 0.f;
          for (int64_t blk = 0; blk < s.kBlocks; ++blk) {
            int32_t dot = 0;
            for (int64_t k = blk * bs; k < std::min(K, (blk + 1) * bs); ++k) dot += q[i * K + k] * code(n, k);
            const int32_t exact = dot - zeroPoint(n, blk) * rowSum[i * s.kBlocks + blk];
            acc = std::fma(static_cast<float>(exact) * scales[n * s.kBlocks + blk], rowScale[i * s.kBlocks + blk], acc);
          }
          y[i * N + n] = s.act.apply(bias ? acc + bias[n] : acc);
        }
    });
    return Status::ok();
  }
  parallelFor(pool, N, [&](int64_t n0, int64_t n1) {
    std::vector<float> w(static_cast<size_t>(K));  // column n of W
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t k = 0; k < K; ++k)
        w[k] = static_cast<float>(code(n, k) - zeroPoint(n, k / bs)) * scales[n * s.kBlocks + k / bs];
      for (int64_t i = 0; i < s.M; ++i) {
        float acc = 0.f;
        for (int64_t k = 0; k < K; ++k) acc += a[i * K + k] * w[k];
        y[i * N + n] = s.act.apply(bias ? acc + bias[n] : acc);
      }
    }
  });
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_MatMulNBits = {OpType::MatMulNBits, "MatMulNBits", 3, 6, 1, 1, nbitsShape, nbitsKernel, nullptr,
                                  0, false};

}  // namespace osprey
