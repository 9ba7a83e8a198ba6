// The integer Winograd convolution's weight transform, its exactness check and its scratch
// (quantized_winograd.h); the run is in quantized_winograd_avx2.cpp.
#include "backends/cpu/kernels/quantized_winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace osprey {

namespace {

constexpr int64_t kNr = 16;  // the Pairs16 kernel's panel width
constexpr int64_t kG[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

int64_t roundUp(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

int32_t weightValue(const uint8_t* w, bool wSigned, const int32_t* wZero, int64_t zeroCount, int64_t o,
                    int64_t at) {
  const int32_t v = wSigned ? static_cast<int32_t>(static_cast<int8_t>(w[at])) : static_cast<int32_t>(w[at]);
  return v - wZero[zeroCount == 1 ? 0 : o];
}

}  // namespace

size_t qwinogradPackedBytes(int64_t C, int64_t O) {
  return static_cast<size_t>(16 * roundUp(C, 2) * roundUp(O, kNr)) * sizeof(int16_t);
}

bool qwinogradExact(const uint8_t* w, bool wSigned, const int32_t* wZero, int64_t zeroCount, int64_t O, int64_t C) {
  for (int64_t o = 0; o < O; ++o) {
    int64_t sum = 0;
    for (int64_t i = 0; i < C * 9; ++i) sum += std::abs(weightValue(w, wSigned, wZero, zeroCount, o, o * C * 9 + i));
    if (4 * 255 * sum >= (int64_t{1} << 31)) return false;
  }
  return true;
}

// Position (xi, nu)'s operand: panel p, row pair k0, column j, slot s at
// ((xi * 4 + nu) * panels + p) * Cp * 16 + k0 * 16 + j * 2 + s (as qgemmPackB lays out Pairs16).
void qwinogradPackWeights(const uint8_t* w, bool wSigned, const int32_t* wZero, int64_t zeroCount, int64_t O,
                          int64_t C, int16_t* dst) {
  const int64_t cp = roundUp(C, 2), panels = roundUp(O, kNr) / kNr;
  std::memset(dst, 0, qwinogradPackedBytes(C, O));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c) {
      int32_t g[3][3];
      for (int64_t t = 0; t < 9; ++t) g[t / 3][t % 3] = weightValue(w, wSigned, wZero, zeroCount, o, (o * C + c) * 9 + t);
      int32_t gt[4][3];  // G' g
      for (int xi = 0; xi < 4; ++xi)
        for (int j = 0; j < 3; ++j) gt[xi][j] = kG[xi][0] * g[0][j] + kG[xi][1] * g[1][j] + kG[xi][2] * g[2][j];
      const int64_t p = o / kNr, j = o % kNr;
      for (int xi = 0; xi < 4; ++xi)
        for (int nu = 0; nu < 4; ++nu) {
          const int32_t u = gt[xi][0] * kG[nu][0] + gt[xi][1] * kG[nu][1] + gt[xi][2] * kG[nu][2];
          dst[((xi * 4 + nu) * panels + p) * cp * kNr + (c & ~int64_t{1}) * kNr + j * 2 + (c & 1)] =
              static_cast<int16_t>(u);
        }
    }
}

int64_t qwinogradBlockTiles(const QWinogradShape& s) {
  constexpr int64_t kBudget = 256 * 1024, kMr = 5, kMaxTiles = 60;  // a block's scratch stays in L2
  return std::clamp<int64_t>(kBudget / (16 * (roundUp(s.C, 16) * 2 + roundUp(s.O, kNr) * 4)) / kMr * kMr, kMr,
                             kMaxTiles);
}

size_t qwinogradScratchBytes(const QWinogradShape& s) {
  return static_cast<size_t>(qwinogradBlockTiles(s) * 16 * (roundUp(s.C, 16) * 2 + roundUp(s.O, kNr) * 4) + 64);
}

}  // namespace osprey
