// Run-time selection of the CPU function table, and the scalar kernels every CPU can run.
#include "backends/cpu/kernels/cpu_functions.h"

#include <cmath>
#include <mutex>
#include <string>

#include "osprey/backend_options.h"

#include "backends/cpu/kernels/depthwise_kernel.h"
#include "backends/cpu/kernels/winograd_kernel.h"

namespace osprey {

void f32_gemm_6x16__scalar(int64_t kc, const float* a, int64_t aRowStride, int64_t aColStride, const float* b,
                           int64_t ldb, float* c, int64_t ldc, bool accumulate, const GemmOutputStage* stage) {
  constexpr int64_t kGemmMr = 6, kGemmNr = 16;
  float acc[kGemmMr][kGemmNr];
  for (int64_t i = 0; i < kGemmMr; ++i)
    for (int64_t j = 0; j < kGemmNr; ++j) acc[i][j] = accumulate ? c[i * ldc + j] : 0.f;
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = b + k * ldb;
    for (int64_t i = 0; i < kGemmMr; ++i) {
      const float av = a[i * aRowStride + k * aColStride];
      for (int64_t j = 0; j < kGemmNr; ++j) acc[i][j] += av * bk[j];
    }
  }
  for (int64_t i = 0; i < kGemmMr; ++i) {
    const float bias = stage && stage->rowBias ? stage->rowBias[i] : 0.f;
    for (int64_t j = 0; j < kGemmNr; ++j) {
      float v = acc[i][j];
      if (stage) {
        v += bias;
        if (stage->residual) v += stage->residual[i * stage->residualStride + j];
        v = v < stage->lo ? stage->lo : (v > stage->hi ? stage->hi : v);
      }
      c[i * ldc + j] = v;
    }
  }
}

void f32_gemv_panel__scalar(int64_t K, const float* a, int64_t aStride, const float* panel, int64_t nr, float* out) {
  for (int64_t j = 0; j < nr; ++j) out[j] = 0.f;
  for (int64_t k = 0; k < K; ++k) {
    const float av = a[k * aStride];
    for (int64_t j = 0; j < nr; ++j) out[j] += av * panel[k * nr + j];
  }
}

void f32_dwconv2d__scalar(const DepthwiseArgs& args, const float* x, const float* w, float bias, float* y) {
  depthwisePlane(args, x, w, bias, y);
}

void f32_maxpool3x3s2__scalar(const float* r0, const float* r1, const float* r2, int64_t lo, int64_t hi, int64_t,
                              float* out) {
  const float* rows[3] = {r0, r1, r2};
  for (int64_t ow = lo; ow < hi; ++ow) {
    float acc = r0[2 * ow];
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw) {
        const float v = rows[kh][2 * ow + kw];
        acc = v > acc ? v : acc;
      }
    out[ow] = acc;
  }
}

void f32_sigmoid__scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-x[i]));
}

void f32_erf__scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
}

void f32_exp__scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void f32_gelu__scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * 0.7071067811865476f));
}

void f32_swish__scalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.f + std::exp(-x[i]));
}

void f32_softmax_row__scalar(const float* x, float* y, int64_t n, float scale) {
  float maxValue = scale * x[0];
  for (int64_t i = 1; i < n; ++i) maxValue = scale * x[i] > maxValue ? scale * x[i] : maxValue;
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) sum += y[i] = std::exp(scale * x[i] - maxValue);
  const float inv = 1.f / sum;
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

void f32_layernorm_row__scalar(const float* x, int64_t n, float epsilon, const float* gamma, const float* beta,
                               float* y) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float squares = 0.f;
  for (int64_t i = 0; i < n; ++i) squares += (x[i] - mean) * (x[i] - mean);
  const float invStd = 1.f / std::sqrt(squares / static_cast<float>(n) + epsilon);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * invStd * gamma[i] + (beta ? beta[i] : 0.f);
}

void f32_direct_conv_row__scalar(const DirectConvRowArgs& a, const float* const* rows, const float* w,
                                 const float* bias, float* y) {
  const int64_t taps = a.rowCount * a.kernelW;
  for (int64_t o = 0; o < a.outChannels; ++o) {
    const float* wo = w + (o / kDirectConvBlock) * taps * kDirectConvBlock + o % kDirectConvBlock;
    for (int64_t ow = 0; ow < a.outW; ++ow) {
      float acc = bias ? bias[o] : 0.f;
      for (int64_t r = 0; r < a.rowCount; ++r) {
        if (!rows[r]) continue;
        for (int64_t kw = 0; kw < a.kernelW; ++kw) {
          const int64_t col = ow * a.stride + kw - a.padW;
          if (col >= 0 && col < a.inW) acc += rows[r][col] * wo[(r * a.kernelW + kw) * kDirectConvBlock];
        }
      }
      y[o * a.outPlaneStride + ow] = acc < a.lo ? a.lo : (acc > a.hi ? a.hi : acc);  // NaN stays NaN
    }
  }
}

void f32_transpose_to_planes__scalar(const float* src, int64_t lds, int64_t positions, int64_t channels,
                                     const float* bias, const float* residual, float lo, float hi, float* y,
                                     int64_t ldy) {
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t c = 0; c < channels; ++c) {
      const float v = src[p * lds + c] + (bias ? bias[c] : 0.f) + (residual ? residual[c * ldy + p] : 0.f);
      y[c * ldy + p] = v < lo ? lo : (v > hi ? hi : v);  // NaN stays NaN
    }
}

void f32_winograd_input_2x3__scalar(const float* const* rows, int64_t tiles, float* v, int64_t posStride) {
  winogradInputRow2x3(rows, tiles, v, posStride);
}

void f32_winograd_output_2x3__scalar(const float* m, int64_t posStride, int64_t tiles, float* y0, float* y1,
                                     const WinogradOutputStage& stage) {
  winogradOutputRow2x3(m, posStride, tiles, y0, y1, stage);
}

void f32_winograd_output_channels_2x3__scalar(const float* m, int64_t posStride, int64_t channels, float* y00,
                                              float* y01, float* y10, float* y11) {
  winogradOutputChannels2x3(m, posStride, channels, y00, y01, y10, y11);
}

bool cpuSupportsAvx512Vnni() {
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

namespace {

CpuFunctions makeScalar() {
  CpuFunctions f;
  f.isa = "scalar";
  f.gemm = f32_gemm_6x16__scalar;
  f.gemvPanel = f32_gemv_panel__scalar;
  f.depthwisePlane = f32_dwconv2d__scalar;
  f.maxPool3x3s2 = f32_maxpool3x3s2__scalar;
  f.directConvRow = f32_direct_conv_row__scalar;
  f.transposeToPlanes = f32_transpose_to_planes__scalar;
  f.sigmoid = f32_sigmoid__scalar;
  f.erf = f32_erf__scalar;
  f.exp = f32_exp__scalar;
  f.gelu = f32_gelu__scalar;
  f.swish = f32_swish__scalar;
  f.tanh = f32_tanh__scalar;
  f.pointwise = f32_pointwise__scalar;
  f.softmaxRow = f32_softmax_row__scalar;
  f.layerNormRow = f32_layernorm_row__scalar;
  f.winogradInput2x3 = f32_winograd_input_2x3__scalar;
  f.winogradOutput2x3 = f32_winograd_output_2x3__scalar;
  f.winogradOutputChannels2x3 = f32_winograd_output_channels_2x3__scalar;
  f.nc8Conv = f32_nc8_conv_6x16__scalar;
  f.nc8DepthwiseRow = f32_nc8_dwconv_row__scalar;
  f.nc8Interleave = f32_nc8_interleave__scalar;
  f.nc8Deinterleave = f32_nc8_deinterleave__scalar;
  f.quantizeRow = quantize_row__scalar;
  f.dequantizeRow = dequantize_row__scalar;
  f.qgemm = {QGemmFormat::Quads, 4, 16, qgemm_quads_4x16__scalar, nullptr, qgemm_bytes_to_floats__scalar,
              qgemm_requantize_floats__scalar};
  return f;
}

// The limit setCpuIsaLimit sets, and whether the table has been chosen under it (then it stays).
struct IsaLimitState {
  std::mutex mutex;
  CpuIsa limit = CpuIsa::Native;
  bool chosen = false;
};

IsaLimitState& isaLimitState() {
  static IsaLimitState state;
  return state;
}

CpuIsa takeIsaLimit() {
  IsaLimitState& s = isaLimitState();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.chosen = true;
  return s.limit;
}

const char* isaName(CpuIsa isa) { return isa == CpuIsa::Scalar ? "scalar" : isa == CpuIsa::Avx2 ? "avx2" : "native"; }

CpuFunctions detect() {
  CpuFunctions f = makeScalar();
  // The limit caps the table, to measure or test a smaller one on a larger CPU.
  const CpuIsa limit = takeIsaLimit();
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (limit == CpuIsa::Scalar) return f;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    f.isa = "avx2_fma";
    f.gemm = f32_gemm_6x16__avx2_fma;
    f.gemmTail = kAvx2TailKernels;
    f.gemmPlanes = f32_gemm_6x16_planes__avx2_fma;
    f.gemmPlanesTail = kAvx2PlanesTailKernels;
    f.gemmTaps = kAvx2TapsKernels;
    f.gemvPanel = f32_gemv_panel__avx2_fma;
    f.depthwisePlane = f32_dwconv2d__avx2_fma;
    f.maxPool3x3s2 = f32_maxpool3x3s2__avx2_fma;
    f.directConvRow = f32_direct_conv_row__avx2_fma;
    f.transposeToPlanes = f32_transpose_to_planes__avx2_fma;
    f.sigmoid = f32_sigmoid__avx2_fma;
    f.erf = f32_erf__avx2_fma;
    f.exp = f32_exp__avx2_fma;
    f.gelu = f32_gelu__avx2_fma;
    f.swish = f32_swish__avx2_fma;
    f.tanh = f32_tanh__avx2_fma;
    f.pointwise = f32_pointwise__avx2_fma;
    f.softmaxRow = f32_softmax_row__avx2_fma;
    f.layerNormRow = f32_layernorm_row__avx2_fma;
    f.winogradInput2x3 = f32_winograd_input_2x3__avx2_fma;
    f.winogradOutput2x3 = f32_winograd_output_2x3__avx2_fma;
    f.winogradOutputChannels2x3 = f32_winograd_output_channels_2x3__avx2_fma;
    f.nc8Conv = f32_nc8_conv_6x16__avx2_fma;
    f.nc8DepthwiseRow = f32_nc8_dwconv_row__avx2_fma;
    f.nc8Interleave = f32_nc8_interleave__avx2_fma;
    f.nc8Deinterleave = f32_nc8_deinterleave__avx2_fma;
    f.quantizeRow = quantize_row__avx2;
    f.dequantizeRow = dequantize_row__avx2;
    f.qgemm = {QGemmFormat::Pairs16, 5, 16, qgemm_pairs16_5x16__avx2, qgemm_pack_pairs16_16__avx2,
              qgemm_bytes_to_floats__avx2, qgemm_requantize_floats__avx2};
    if (__builtin_cpu_supports("avx512f") && limit != CpuIsa::Avx2) {
      f.isa = "avx512f";
      f.gemm = f32_gemm_8x32__avx512f;
      f.gemmMr = 8, f.gemmNr = 32;
      f.gemmTail = kAvx512TailKernels;
      f.gemmPlanes = f32_gemm_8x32_planes__avx512f;
      f.gemmPlanesTail = kAvx512PlanesTailKernels;
      f.gemmTaps = kAvx512TapsKernels;
      f.maxPool3x3s2 = f32_maxpool3x3s2__avx512f;
      f.directConvRow = f32_direct_conv_row__avx512f;
      f.depthwiseFlat = f32_dwconv3x3_flat__avx512f;
      f.depthwiseStride2 = f32_dwconv_stride2__avx512f;
      f.nc16DepthwiseRows = f32_nc16_dwconv_rows__avx512f;
      f.nc16Interleave = f32_nc16_interleave__avx512f;
      f.transposeToPlanes = f32_transpose_to_planes__avx512f;
      f.sigmoid = f32_sigmoid__avx512f;
      f.tanh = f32_tanh__avx512f;
      f.pointwise = f32_pointwise__avx512f;
      f.swish = f32_swish__avx512f;
      f.gelu = f32_gelu__avx512f;
      if (cpuSupportsAvx512Vnni())
        f.qgemm = {QGemmFormat::Quads, 8, 32, qgemm_quads_8x32__avx512vnni, qgemm_pack_quads_32__avx512vnni,
                   qgemm_bytes_to_floats__avx2, qgemm_requantize_floats__avx2};
    }
  }
#else
  (void)limit;
#endif
  return f;
}

}  // namespace

Status setCpuIsaLimit(CpuIsa limit) {
  IsaLimitState& s = isaLimitState();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.chosen && limit != s.limit)
    return Status::invalidArgument(std::string("the CPU kernel table is already chosen (limit '") + isaName(s.limit) +
                                   "'); set the CPU ISA limit to '" + isaName(limit) + "' before the first session runs");
  s.limit = limit;
  return Status::ok();
}

bool cpuIsaFromName(const std::string& name, CpuIsa* out) {
  if (name == "native") *out = CpuIsa::Native;
  else if (name == "avx2") *out = CpuIsa::Avx2;
  else if (name == "scalar") *out = CpuIsa::Scalar;
  else return false;
  return true;
}

std::string cpuIsaInUse() { return cpuFunctions().isa; }

const CpuFunctions& cpuFunctions() {
  static const CpuFunctions table = detect();
  return table;
}

const CpuFunctions& scalarCpuFunctions() {
  static const CpuFunctions table = makeScalar();
  return table;
}

}  // namespace osprey
