// The body of the NHWC depthwise kernels (quantized_depthwise_nhwc.h), included inside an
// unnamed namespace by each translation unit that compiles it for its own ISA. `V` holds the
// ISA's vector of 16 channels (Reg; load, fma, and keep, which pins a loaded value to a
// register), made once per call from the arguments and the output stage, with convert (16 bytes
// into floats x - zx) and store<P> (P positions' sums, requantised, n <= 16 bytes each,
// positions `step` bytes apart); kPositions output positions share each weight load.
//
// Ring rows and packed weights go in blocks of 16 channels, [block][column or tap][16]: the
// columns and taps one block of positions reads are then fixed offsets from one pointer, so the
// loops keep their addresses in a few registers; lanes past the channels hold finite values that
// meet zero weights, and are never stored.
constexpr int64_t kNhwcBlock = 16;

inline int64_t nhwcBlocks(int64_t channels) { return (channels + kNhwcBlock - 1) / kNhwcBlock; }

struct NhwcRing {
  int64_t width = 0;  // columns of a ring row: padded column 0 is input column -padW
  int64_t rows = 0;   // input rows one output row can need, so slot ih % rows never collides
};

inline NhwcRing nhwcRing(const QDepthwiseNhwcArgs& a) {
  NhwcRing r;
  r.width = std::max<int64_t>(0, (a.outW - 1) * a.strideW + (a.kernelW - 1) * a.dilationW + 1);
  r.rows = std::max<int64_t>(1, std::min((a.kernelH - 1) * a.dilationH + 1, a.inH));
  return r;
}

inline size_t nhwcScratchBytes(const QDepthwiseNhwcArgs& a) {
  const NhwcRing r = nhwcRing(a);
  const int64_t floats = (r.rows * r.width + 2) * nhwcBlocks(a.channels) * kNhwcBlock;
  const int64_t bytes = floats * 4 + r.rows * 8 + 2 * std::max<int64_t>(a.kernelH, 0) * 8;
  return static_cast<size_t>((bytes + 63) / 64 * 64);
}

// What the output rows of one call share. The bias is split in two floats, low = bias & 255 and
// high = bias - low (a multiple of 256, so exact): the sums start from low and stay integers
// below 2^24 (258 * 255 * 255 + 255), and one float addition of high then rounds sum + bias
// as float(int32(sum) + bias) does, saving two conversions per vector.
struct NhwcCall {
  const QDepthwiseNhwcArgs* args = nullptr;
  int64_t blockFloats = 0;  // one block of a ring row
  const float* biasLow = nullptr;
  const float* biasHigh = nullptr;
  const float* scale = nullptr;
  // The window rows of the output row that lie inside the map: ring rows and the packed weights
  // of the same kernel rows (block 0 of each).
  const float** x = nullptr;
  const float** w = nullptr;
  int64_t rows = 0;
};

// P positions from ow on, every channel. KW > 0: kernelW = KW, strideW = S and dilationW = 1 at
// compile time, and each input column is loaded once for all taps that read it.
template <class V, int P, int KW, int S>
void nhwcPositions(const V& v, const NhwcCall& call, int64_t ow, uint8_t* yRow) {
  using Reg = typename V::Reg;
  constexpr int64_t L = kNhwcBlock;
  const QDepthwiseNhwcArgs& a = *call.args;
  const int64_t stride = KW ? S : a.strideW, tapFloats = a.kernelH * a.kernelW * L;
  for (int64_t c = 0; c < a.channels; c += L) {
    const int64_t block = c / L;
    Reg acc[P];
    const Reg low = V::load(call.biasLow + c);
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) acc[p] = low;
    for (int64_t r = 0; r < call.rows; ++r) {
      const float* xr = call.x[r] + block * call.blockFloats + ow * stride * L;
      const float* wr = call.w[r] + block * tapFloats;
      if constexpr (KW > 0) {
        constexpr int kColumns = (P - 1) * S + KW;
        Reg column[kColumns];
#pragma GCC unroll 32
        for (int j = 0; j < kColumns; ++j) column[j] = V::keep(V::load(xr + j * L));
#pragma GCC unroll 8
        for (int kw = 0; kw < KW; ++kw) {
          const Reg wv = V::load(wr + kw * L);
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) acc[p] = V::fma(column[p * S + kw], wv, acc[p]);
        }
      } else {
        for (int64_t kw = 0; kw < a.kernelW; ++kw) {
          const Reg wv = V::load(wr + kw * L);
          const float* xk = xr + kw * a.dilationW * L;
#pragma GCC unroll 16
          for (int p = 0; p < P; ++p) acc[p] = V::fma(V::load(xk + p * stride * L), wv, acc[p]);
        }
      }
    }
    v.template store<P>(acc, call.biasHigh + c, call.scale + c, yRow + ow * a.channels + c, a.channels,
                        std::min(L, a.channels - c));
  }
}

// Positions [0, outW) in blocks of P. A remainder of P / 2 takes a block of its own; any other
// takes a last block of P ending at outW, which rewrites bytes of the block before with the same
// values: a shorter block would keep fewer FMA chains in flight. Rows narrower than P take
// blocks of P / 2.
template <class V, int P, int KW, int S>
void nhwcOutputRow(const V& v, const NhwcCall& call, uint8_t* yRow) {
  const int64_t outW = call.args->outW;
  if constexpr (P > 1)
    if (outW < P) return nhwcOutputRow<V, P / 2, KW, S>(v, call, yRow);
  int64_t ow = 0;
  for (; ow + P <= outW; ow += P) nhwcPositions<V, P, KW, S>(v, call, ow, yRow);
  if (ow == outW) return;
  if constexpr (P > 1)
    if (outW - ow == P / 2) return nhwcPositions<V, P / 2, KW, S>(v, call, ow, yRow);
  nhwcPositions<V, P, KW, S>(v, call, outW - P, yRow);
}

template <class V>
using NhwcRowFunction = void (*)(const V&, const NhwcCall&, uint8_t*);

template <class V>
NhwcRowFunction<V> nhwcRowFunction(const QDepthwiseNhwcArgs& a) {
  constexpr int P = V::kPositions;
  if (a.dilationW == 1 && (a.strideW == 1 || a.strideW == 2) && (a.kernelW == 3 || a.kernelW == 5)) {
    if (a.kernelW == 3) return a.strideW == 1 ? nhwcOutputRow<V, P, 3, 1> : nhwcOutputRow<V, P, 3, 2>;
    return a.strideW == 1 ? nhwcOutputRow<V, P, 5, 1> : nhwcOutputRow<V, P, 5, 2>;
  }
  return nhwcOutputRow<V, P, 0, 0>;
}

// Input row `ih` into a ring row, columns inside the map only (the padding columns stay zero).
template <class V>
void nhwcConvertRow(const V& v, const NhwcCall& call, const uint8_t* image, int64_t ih, int64_t firstColumn,
                    int64_t endColumn, float* ringRow) {
  constexpr int64_t L = kNhwcBlock;
  const QDepthwiseNhwcArgs& a = *call.args;
  const int64_t channels = a.channels, imageBytes = a.inH * a.inW * channels;
  const int64_t columnZero = ih * a.inW - a.padW;  // image column of ring column 0
  // Block by block, so that the stores run along one ring block. A vector past the column's last
  // channel reads the next column's bytes, harmless, except past the image's end.
  for (int64_t c = 0; c < channels; c += L) {
    float* dst = ringRow + c / L * call.blockFloats;
    const int64_t lastStart = imageBytes - c - L;  // the last byte offset a whole vector may start at
    const int64_t endWhole = lastStart < 0 ? firstColumn : std::min(endColumn, lastStart / channels - columnZero + 1);
    int64_t col = firstColumn;
    for (; col < endWhole; ++col) v.convert(image + (columnZero + col) * channels + c, dst + col * L);
    for (; col < endColumn; ++col) {
      uint8_t tail[L] = {};
      std::memcpy(tail, image + (columnZero + col) * channels + c, static_cast<size_t>(std::min(L, channels - c)));
      v.convert(tail, dst + col * L);
    }
  }
}

template <class V>
void depthwiseNhwcRows(const QDepthwiseNhwcArgs& a, const uint8_t* x, const void* packedWeights, const int32_t* bias,
                       const float* scale, const QGemmOutputStage& stage, int64_t oh0, int64_t oh1, uint8_t* y,
                       void* scratch) {
  if (oh0 >= oh1 || a.outW <= 0 || a.channels <= 0) return;
  constexpr int64_t L = kNhwcBlock;
  const NhwcRing ring = nhwcRing(a);
  const int64_t blocks = nhwcBlocks(a.channels), blockFloats = ring.width * L, rowFloats = blocks * blockFloats;
  float* ringRows = static_cast<float*>(scratch);
  float* biasLow = ringRows + ring.rows * rowFloats;
  float* biasHigh = biasLow + blocks * L;
  int64_t* heldRow = reinterpret_cast<int64_t*>(biasHigh + blocks * L);
  for (int64_t c = 0; c < blocks * L; ++c) {
    const int32_t low = bias[c] & 255;
    biasLow[c] = static_cast<float>(low);
    biasHigh[c] = static_cast<float>(bias[c] - low);
  }
  NhwcCall call;
  call.args = &a, call.blockFloats = blockFloats;
  call.biasLow = biasLow, call.biasHigh = biasHigh, call.scale = scale;
  call.x = reinterpret_cast<const float**>(heldRow + ring.rows);
  call.w = call.x + a.kernelH;
  // Padded columns [0, firstColumn) and [endColumn, width) stand for zero-point bytes.
  const int64_t firstColumn = std::min(a.padW, ring.width);
  const int64_t endColumn = std::min(ring.width, std::max(firstColumn, a.padW + a.inW));
  for (int64_t slot = 0; slot < ring.rows; ++slot) {
    for (int64_t b = 0; b < blocks; ++b) {
      float* block = ringRows + slot * rowFloats + b * blockFloats;
      std::fill(block, block + firstColumn * L, 0.f);
      std::fill(block + endColumn * L, block + blockFloats, 0.f);
    }
    heldRow[slot] = -1;
  }
  const V v(a, stage);
  const NhwcRowFunction<V> outputRow = nhwcRowFunction<V>(a);
  const float* w = static_cast<const float*>(packedWeights);
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t top = oh * a.strideH - a.padH;
    call.rows = 0;
    for (int64_t kh = 0; kh < a.kernelH; ++kh) {
      const int64_t ih = top + kh * a.dilationH;
      if (ih < 0 || ih >= a.inH) continue;
      const int64_t slot = ih % ring.rows;
      float* row = ringRows + slot * rowFloats;
      if (heldRow[slot] != ih) nhwcConvertRow(v, call, x, ih, firstColumn, endColumn, row);
      heldRow[slot] = ih;
      call.x[call.rows] = row;
      call.w[call.rows++] = w + kh * a.kernelW * L;
    }
    outputRow(v, call, y + oh * a.outW * a.channels);
  }
}
