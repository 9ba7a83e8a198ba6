// The portable body of the depthwise lanes kernel (quantized_depthwise.h), included inside an
// unnamed namespace by each translation unit that compiles it for its own ISA flags.
inline void depthwiseLanesPortable(const QDepthwiseLanesArgs& a, const float* x, const float* w, const int32_t* bias,
                                   const float* scale, const QGemmOutputStage& stage, uint8_t* y) {
  constexpr int64_t L = kQDepthwiseLanes;
  for (int64_t oh = 0; oh < a.outH; ++oh)
    for (int64_t ow = 0; ow < a.outW; ++ow) {
      float acc[L] = {};
      for (int64_t kh = 0; kh < a.kernelH; ++kh) {
        const int64_t ih = oh * a.strideH - a.padH + kh * a.dilationH;
        if (ih < 0 || ih >= a.inH) continue;
        for (int64_t kw = 0; kw < a.kernelW; ++kw) {
          const int64_t iw = ow * a.strideW - a.padW + kw * a.dilationW;
          if (iw < 0 || iw >= a.inW) continue;
          const float* xv = x + (ih * a.inW + iw) * L;
          const float* wv = w + (kh * a.kernelW + kw) * L;
          for (int64_t c = 0; c < L; ++c) acc[c] += xv[c] * wv[c];
        }
      }
      uint8_t* out = y + (oh * a.outW + ow) * L;
      for (int64_t c = 0; c < L; ++c)
        out[c] = static_cast<uint8_t>(
            qgemmRequantize(static_cast<float>(static_cast<int32_t>(acc[c]) + bias[c]) * scale[c], stage));
    }
}
