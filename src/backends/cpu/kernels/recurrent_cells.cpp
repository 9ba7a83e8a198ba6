// The gates of LSTM, GRU and RNN cells on a run of hidden units, in plain loops around the
// function table's vector sigmoid. tanh(x) is computed as 2 sigmoid(2x) - 1: the pre-activation
// is doubled on its way into the sigmoid and the result mapped back as it is used (absolute
// error about 2e-7, which is all the cells' outputs, bounded by 1 in size, need).
#include <algorithm>

#include "backends/cpu/kernels/recurrent.h"

namespace osprey {

namespace {

// max/min in this order keep a NaN (each returns its first operand when a comparison fails).
inline float clamp(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

// The sigmoid in place on gates [first, last) of a row whose gates lie `hidden` apart: one call
// when the run is all of the hidden units, since those gates are then contiguous.
void sigmoidGates(const CpuFunctions& fn, float* gates, int first, int last, int64_t hidden, int64_t units) {
  if (units == hidden) {
    fn.sigmoid(gates + first * hidden, gates + first * hidden, (last - first) * hidden);
    return;
  }
  for (int g = first; g < last; ++g) fn.sigmoid(gates + g * hidden, gates + g * hidden, units);
}

}  // namespace

void RecurrentCellMath::rnn(const RecurrentCellRows& r, int64_t units) const {
  float* g = r.gates;
  for (int64_t j = 0; j < units; ++j) g[j] = 2.f * clamp(g[j] + r.projection[j], clipLo, clipHi);
  fn->sigmoid(g, g, units);
  for (int64_t j = 0; j < units; ++j) r.hNext[j] = 2.f * g[j] - 1.f;
}

void RecurrentCellMath::lstm(const RecurrentCellRows& r, int64_t units) const {
  const int64_t H = hidden;
  float *gi = r.gates, *go = r.gates + H, *gf = r.gates + 2 * H, *gc = r.gates + 3 * H;
  const float *xi = r.projection, *xo = r.projection + H, *xf = r.projection + 2 * H, *xc = r.projection + 3 * H;
  float* c = r.cell;
  if (r.peepholes) {
    const float *pi = r.peepholes, *pf = r.peepholes + 2 * H;
    for (int64_t j = 0; j < units; ++j) {
      gi[j] = clamp(gi[j] + xi[j] + pi[j] * c[j], clipLo, clipHi);
      gf[j] = clamp(gf[j] + xf[j] + pf[j] * c[j], clipLo, clipHi);
      gc[j] = 2.f * clamp(gc[j] + xc[j], clipLo, clipHi);
      go[j] += xo[j];
    }
  } else {
    for (int64_t j = 0; j < units; ++j) {
      gi[j] = clamp(gi[j] + xi[j], clipLo, clipHi);
      go[j] = clamp(go[j] + xo[j], clipLo, clipHi);
      gf[j] = clamp(gf[j] + xf[j], clipLo, clipHi);
      gc[j] = 2.f * clamp(gc[j] + xc[j], clipLo, clipHi);
    }
  }
  // Without peepholes the output gate is ready too: i, o, f and c in one call on a whole row.
  if (r.peepholes) {
    sigmoidGates(*fn, r.gates, 0, 1, H, units);
    sigmoidGates(*fn, r.gates, 2, 4, H, units);
  } else {
    sigmoidGates(*fn, r.gates, 0, 4, H, units);
  }
  float* h = r.hNext;  // holds 2 c_new until the output gate is applied
  for (int64_t j = 0; j < units; ++j) {
    const float f = inputForget ? 1.f - gi[j] : gf[j];
    const float cNew = f * c[j] + gi[j] * (2.f * gc[j] - 1.f);
    c[j] = cNew;
    h[j] = 2.f * cNew;
  }
  if (r.peepholes) {
    const float* po = r.peepholes + H;
    for (int64_t j = 0; j < units; ++j) go[j] = clamp(go[j] + po[j] * c[j], clipLo, clipHi);
    fn->sigmoid(go, go, units);
  }
  fn->sigmoid(h, h, units);
  for (int64_t j = 0; j < units; ++j) h[j] = go[j] * (2.f * h[j] - 1.f);
}

void RecurrentCellMath::gruGates(const RecurrentCellRows& r, int64_t units, bool linearBeforeReset) const {
  const int64_t H = hidden;
  float *gz = r.gates, *gr = r.gates + H, *gh = r.gates + 2 * H;
  const float *xz = r.projection, *xr = r.projection + H, *xh = r.projection + 2 * H;
  for (int64_t j = 0; j < units; ++j) {
    gz[j] = clamp(gz[j] + xz[j], clipLo, clipHi);
    gr[j] = clamp(gr[j] + xr[j], clipLo, clipHi);
  }
  sigmoidGates(*fn, r.gates, 0, 2, H, units);
  if (!linearBeforeReset) {
    for (int64_t j = 0; j < units; ++j) r.resetHidden[j] = gr[j] * r.hPrev[j];
    return;
  }
  const float* rbh = r.candidateBias;
  for (int64_t j = 0; j < units; ++j)
    gh[j] = 2.f * clamp(xh[j] + gr[j] * (gh[j] + (rbh ? rbh[j] : 0.f)), clipLo, clipHi);
  fn->sigmoid(gh, gh, units);
  for (int64_t j = 0; j < units; ++j) r.hNext[j] = (1.f - gz[j]) * (2.f * gh[j] - 1.f) + gz[j] * r.hPrev[j];
}

void RecurrentCellMath::gruCandidate(const RecurrentCellRows& r, int64_t units) const {
  const int64_t H = hidden;
  const float* gz = r.gates;
  float* gh = r.gates + 2 * H;
  const float* xh = r.projection + 2 * H;
  for (int64_t j = 0; j < units; ++j) gh[j] = 2.f * clamp(gh[j] + xh[j], clipLo, clipHi);
  fn->sigmoid(gh, gh, units);
  for (int64_t j = 0; j < units; ++j) r.hNext[j] = (1.f - gz[j]) * (2.f * gh[j] - 1.f) + gz[j] * r.hPrev[j];
}

}  // namespace osprey
