// The integer NHWC depthwise kernel (quantized_depthwise_nhwc.h) on AVX-512 VNNI: each input
// row a call needs becomes byte quads once, in a ring of rows (quantized_depthwise_nhwc_quads.inl),
// and one vpdpbusd per kernel row of up to four taps adds a position's products for 16 channels
// into int32, where the float kernels take one FMA per tap.
//
// The quads hold raw uint8 bytes x, not x - zx, and the window's padding reads zx itself, so
// sum (x - zx) * w = sum x * w - zx * (the weights of the window rows inside the map): that
// correction goes into the bias, once per run of window rows. The sum wraps in int32 exactly as
// sum + bias does, so the output stage sees the float kernels' int32.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/quantized_depthwise_nhwc.h"

namespace osprey {

namespace {
#include "backends/cpu/kernels/quantized_depthwise_nhwc_quads.inl"

constexpr int kPositions = 8;  // output positions sharing each weight load

struct QuadCall {
  const QDepthwiseNhwcArgs* args = nullptr;
  QuadRing ring;
  int64_t blockBytes = 0;        // one block of a ring row
  int64_t weightBlockBytes = 0;  // one block of the packed weights
  const int32_t* bias = nullptr;
  const float* scale = nullptr;
  // The window rows of the output row that lie inside the map: ring rows and the packed weights
  // of the same kernel rows (block 0 of each).
  const uint8_t** x = nullptr;
  const uint8_t** w = nullptr;
  int64_t rows = 0;
};

struct OutputStage {
  __m512i yZero, lo;
  __m512 hi;
};

// acc + the products of x's uint8 quads with w's int8 quads. In asm, so that acc stays in its
// register: with the intrinsic GCC 12 copies every accumulator twice per kernel row.
inline __m512i dotQuads(__m512i acc, __m512i x, __m512i w) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(x), "v"(w));
  return acc;
}

// p itself, opaque to the compiler: else GCC keeps base + offset for every position and quad
// in a register of its own, runs out and reloads them from the stack in the inner loop.
inline const uint8_t* opaque(const uint8_t* p) {
  __asm__("" : "+r"(p));
  return p;
}

// P positions from ow on, every channel. Q > 0: the quads per kernel row at compile time; Unit:
// neighbouring positions read neighbouring stored quads.
template <int P, int Q, bool Unit>
void quadPositions(const QuadCall& call, const OutputStage& out, int64_t ow, uint8_t* yRow) {
  const QDepthwiseNhwcArgs& a = *call.args;
  const int64_t step = (Unit ? 1 : call.ring.positionStep) * kQuadBytes, quads = Q ? Q : call.ring.quads;
  const int64_t quadStep = call.ring.quadStep * kQuadBytes;
  for (int64_t c = 0; c < a.channels; c += kQuadLanes) {
    const int64_t block = c / kQuadLanes;
    __m512i acc[P];
    const __m512i bias = _mm512_loadu_si512(call.bias + c);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[p] = bias;
    for (int64_t r = 0; r < call.rows; ++r) {
      const uint8_t* xr = call.x[r] + block * call.blockBytes + ow * step;
      const uint8_t* wr = call.w[r] + block * call.weightBlockBytes;
#pragma GCC unroll 2
      for (int64_t q = 0; q < quads; ++q) {
        const __m512i wv = _mm512_loadu_si512(wr + q * kQuadBytes);
        const uint8_t* xq = opaque(xr + q * quadStep);
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) acc[p] = dotQuads(acc[p], _mm512_load_si512(xq + p * step), wv);
      }
    }
    // float(sum + bias) * scale, clamped, rounded half to even (the MXCSR default), + zero point,
    // as qgemmRequantize: hi in float, lo after the rounding, where it is an integer operation.
    // vminps returns its second operand where either is NaN, and the rounding turns NaN and
    // values below int32 into INT32_MIN, so both meet lo as they do there. The narrowing store
    // keeps each int32's low byte, as the cast to uint8_t does.
    const __m512 scale = _mm512_loadu_ps(call.scale + c);
    const int64_t n = std::min(kQuadLanes, a.channels - c);
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
    uint8_t* y = yRow + ow * a.channels + c;
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
      const __m512 f = _mm512_min_ps(out.hi, _mm512_mul_ps(_mm512_cvtepi32_ps(acc[p]), scale));
      const __m512i q = _mm512_add_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(f), out.lo), out.yZero);
      if (n == kQuadLanes)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + p * a.channels), _mm512_cvtepi32_epi8(q));
      else
        _mm512_mask_cvtepi32_storeu_epi8(y + p * a.channels, mask, q);
    }
  }
}

// Positions [ow, end) in blocks of P, then the rest in blocks of P / 2, P / 4, ... (7 = 4 + 2 + 1):
// each position once, where rewriting a last block of P ending at the row's end would do up to
// P - 1 positions twice (2 of 14, 1 of 7: the maps of most of MobileNet's channels).
template <int P, int Q, bool Unit>
void quadOutputSpan(const QuadCall& call, const OutputStage& out, int64_t ow, int64_t end, uint8_t* yRow) {
  for (; ow + P <= end; ow += P) quadPositions<P, Q, Unit>(call, out, ow, yRow);
  if constexpr (P > 1)
    if (ow < end) quadOutputSpan<P / 2, Q, Unit>(call, out, ow, end, yRow);
}

template <int Q, bool Unit>
void quadOutputRow(const QuadCall& call, const OutputStage& out, uint8_t* yRow) {
  quadOutputSpan<kPositions, Q, Unit>(call, out, 0, call.args->outW, yRow);
}

using QuadRowFunction = void (*)(const QuadCall&, const OutputStage&, uint8_t*);

template <bool Unit>
QuadRowFunction quadRowFunction(int64_t quads) {
  if (quads == 1) return quadOutputRow<1, Unit>;
  if (quads == 2) return quadOutputRow<2, Unit>;
  return quadOutputRow<0, Unit>;
}

// Shuffles of a 16-byte column broadcast to all four 128-bit lanes: shuffle t moves channel c's
// byte to byte t of dword c, zero elsewhere.
struct QuadShuffles {
  alignas(64) uint8_t index[4][64];
  constexpr QuadShuffles() : index() {
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < 64; ++i) index[t][i] = i % 4 == t ? static_cast<uint8_t>(i / 4 % 4 + i / 16 * 4) : 0x80;
  }
};
constexpr QuadShuffles kQuadShuffles;

// What turns input bytes into quads: the shuffles, int8's flip of the new byte, and the zero
// point (flipped) at each byte for padding.
struct QuadMaker {
  __m512i place[4], flip[4], pad[4];
  __mmask16 tailMask;

  explicit QuadMaker(const QDepthwiseNhwcArgs& a) {
    const uint32_t flipByte = a.signedX ? 0x80 : 0;
    const uint32_t zeroByte = static_cast<uint32_t>(a.xZero) & 0xFF;  // raw: flipped, it is uint8's zero point
    for (int t = 0; t < 4; ++t) {
      place[t] = _mm512_load_si512(kQuadShuffles.index[t]);
      flip[t] = _mm512_set1_epi32(static_cast<int>(flipByte << (8 * t)));
      pad[t] = _mm512_set1_epi32(static_cast<int>((zeroByte ^ flipByte) << (8 * t)));
    }
    const int64_t tail = a.channels % kQuadLanes;
    tailMask = static_cast<__mmask16>(tail ? (1u << tail) - 1 : 0xFFFF);
  }
};

// The stored quads of one block of a ring row, from `src`, the block's first byte in the input
// row. Quads whose new bytes all lie inside the map skip the padding checks. N:
// QuadRing::newBytes; Tail: a block past the last channel, read with masked loads so that no
// byte past the image is.
template <int N, bool Tail>
void quadConvertBlock(const QuadCall& call, const QuadMaker& m, const uint8_t* src, uint8_t* dst) {
  const QDepthwiseNhwcArgs& a = *call.args;
  const int64_t C = a.channels, inW = a.inW, padW = a.padW, d = a.dilationW;
  const int64_t columns = call.ring.columns, columnStep = call.ring.columnStep;
  auto addInside = [&](__m512i quad, int64_t column, int t) {
    const uint8_t* at = src + (column - padW) * C;
    const __m128i bytes =
        Tail ? _mm_maskz_loadu_epi8(m.tailMask, at) : _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const __m512i placed = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(bytes), m.place[t]);
    return _mm512_ternarylogic_epi32(quad, placed, m.flip[t], 0xF6);  // quad | (placed ^ flip)
  };
  auto add = [&](__m512i quad, int64_t column, int t) {
    if (column < padW || column >= padW + inW) return _mm512_or_si512(quad, m.pad[t]);
    return addInside(quad, column, t);
  };
  constexpr int kFirstNew = N < 4 ? 4 - N : 0;
  auto next = [&](__m512i quad, int64_t k, auto addByte) {
    if constexpr (N < 4)
      quad = _mm512_srli_epi32(quad, 8 * N);
    else
      quad = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int t = kFirstNew; t < 4; ++t) quad = addByte(quad, k * columnStep + t * d, t);
    _mm512_store_si512(dst + k * kQuadBytes, quad);
    return quad;
  };
  __m512i quad = _mm512_setzero_si512();
  for (int t = 0; t < 4; ++t) quad = add(quad, t * d, t);
  _mm512_store_si512(dst, quad);
  // Quad k's new bytes lie inside the map when k * columnStep is in [firstInside, endInside).
  const int64_t firstInside = std::max<int64_t>(0, padW - kFirstNew * d), endInside = padW + inW - 3 * d;
  const int64_t insideBegin = std::min(columns, std::max<int64_t>(1, (firstInside + columnStep - 1) / columnStep));
  const int64_t insideEnd =
      std::max(insideBegin, std::min(columns, endInside > 0 ? (endInside + columnStep - 1) / columnStep : 0));
  int64_t k = 1;
  for (; k < insideBegin; ++k) quad = next(quad, k, add);
  for (; k < insideEnd; ++k) quad = next(quad, k, addInside);
  for (; k < columns; ++k) quad = next(quad, k, add);
}

// Input row `ih` into a ring row: stored quads [0, columns) of every block.
template <int N>
void quadConvertRow(const QuadCall& call, const QuadMaker& m, const uint8_t* image, int64_t ih, uint8_t* ringRow) {
  const QDepthwiseNhwcArgs& a = *call.args;
  const uint8_t* row = image + ih * a.inW * a.channels;
  for (int64_t c = 0; c < a.channels; c += kQuadLanes) {
    uint8_t* dst = ringRow + c / kQuadLanes * call.blockBytes;
    if (c + kQuadLanes > a.channels)
      quadConvertBlock<N, true>(call, m, row + c, dst);
    else
      quadConvertBlock<N, false>(call, m, row + c, dst);
  }
}

using QuadConvertFunction = void (*)(const QuadCall&, const QuadMaker&, const uint8_t*, int64_t, uint8_t*);

QuadConvertFunction quadConvertFunction(int64_t newBytes) {
  if (newBytes == 1) return quadConvertRow<1>;
  if (newBytes == 2) return quadConvertRow<2>;
  if (newBytes == 3) return quadConvertRow<3>;
  return quadConvertRow<4>;
}

// bias[c] - zx * (the weights of kernel rows [kh0, kh1)), with uint8's zero point, in wrapping
// int32 as the sums go; `sums` are the packed weights' sums of kernel rows [0, kh).
void correctBias(const QDepthwiseNhwcArgs& a, const int32_t* bias, const int32_t* sums, int64_t kh0, int64_t kh1,
                 int32_t* out) {
  const int64_t lanes = quadBlocks(a.channels) * kQuadLanes;
  const __m512i zero = _mm512_set1_epi32(a.signedX ? a.xZero + 128 : a.xZero);
  for (int64_t c = 0; c < lanes; c += kQuadLanes) {
    __m512i rows = kh1 > 0 ? _mm512_loadu_si512(sums + (kh1 - 1) * lanes + c) : _mm512_setzero_si512();
    if (kh0 > 0) rows = _mm512_sub_epi32(rows, _mm512_loadu_si512(sums + (kh0 - 1) * lanes + c));
    const __m512i corrected = _mm512_sub_epi32(_mm512_loadu_si512(bias + c), _mm512_mullo_epi32(zero, rows));
    _mm512_storeu_si512(out + c, corrected);
  }
}

}  // namespace

void qdwconv_nhwc_quads__avx512vnni(const QDepthwiseNhwcArgs& a, const uint8_t* x, const void* packedWeights,
                                    const int32_t* bias, const float* scale, const QGemmOutputStage& stage,
                                    int64_t oh0, int64_t oh1, uint8_t* y, void* scratch) {
  if (oh0 >= oh1 || a.outW <= 0 || a.channels <= 0) return;
  const QuadRing ring = quadRing(a);
  const QuadScratch layout = quadScratch(a);
  auto* base = static_cast<uint8_t*>(scratch);
  const auto* weights = static_cast<const uint8_t*>(packedWeights);
  const auto* sums = reinterpret_cast<const int32_t*>(weights + quadWeightSumsOffset(a.channels, a.kernelH, a.kernelW));
  auto* rowBias = reinterpret_cast<int32_t*>(base + layout.biasOffset);
  auto* heldRow = reinterpret_cast<int64_t*>(base + layout.heldOffset);
  QuadCall call;
  call.args = &a, call.ring = ring;
  call.blockBytes = ring.columns * kQuadBytes;
  call.weightBlockBytes = quadWeightBlockBytes(a.kernelH, a.kernelW);
  call.bias = rowBias, call.scale = scale;
  call.x = reinterpret_cast<const uint8_t**>(base + layout.pointersOffset);
  call.w = call.x + a.kernelH;
  const int64_t rowBytes = quadBlocks(a.channels) * call.blockBytes;
  std::fill(heldRow, heldRow + ring.rows, int64_t{-1});
  OutputStage out;
  out.yZero = _mm512_set1_epi32(stage.zeroPoint);
  out.lo = _mm512_set1_epi32(stage.lo - stage.zeroPoint);
  out.hi = _mm512_set1_ps(static_cast<float>(stage.hi - stage.zeroPoint));
  const QuadMaker maker(a);
  const QuadConvertFunction convertRow = quadConvertFunction(ring.newBytes);
  const QuadRowFunction outputRow =
      ring.positionStep == 1 ? quadRowFunction<true>(ring.quads) : quadRowFunction<false>(ring.quads);
  int64_t biasRows[2] = {-1, -1};  // the kernel rows rowBias stands for
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t top = oh * a.strideH - a.padH;
    // The window rows inside the map are kernel rows [kh0, kh1).
    const int64_t kh1 = std::min(a.kernelH, top < a.inH ? (a.inH - top + a.dilationH - 1) / a.dilationH : 0);
    const int64_t kh0 = std::min(kh1, top < 0 ? (-top + a.dilationH - 1) / a.dilationH : 0);
    if (kh0 != biasRows[0] || kh1 != biasRows[1]) {
      correctBias(a, bias, sums, kh0, kh1, rowBias);
      biasRows[0] = kh0, biasRows[1] = kh1;
    }
    call.rows = 0;
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const int64_t ih = top + kh * a.dilationH;
      const int64_t slot = ih % ring.rows;
      uint8_t* row = base + slot * rowBytes;
      if (heldRow[slot] != ih) convertRow(call, maker, x, ih, row);
      heldRow[slot] = ih;
      call.x[call.rows] = row;
      call.w[call.rows++] = weights + kh * ring.quads * kQuadBytes;
    }
    outputRow(call, out, y + oh * a.outW * a.channels);
  }
}

}  // namespace osprey
