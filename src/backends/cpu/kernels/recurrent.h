// The CPU backend's LSTM, GRU and RNN (recurrent.cpp): what the execution and its tests share.
#pragma once
#include <cstdint>

#include "backends/cpu/kernels/cpu_functions.h"

namespace osprey {

enum class RecurrentCell { Rnn, Gru, Lstm };

// How many threads share each direction's steps, each taking a run of the hidden units in whole
// panels of nr columns of the packed R: 1 (a direction to a thread, no barrier between steps)
// unless a direction has several threads to itself and its step's product of batch x hidden by
// gates x hidden is large enough to pay for the barrier after every step.
int64_t recurrentSlicesPerDirection(int threads, int64_t directions, int64_t batch, int64_t gates, int64_t hidden,
                                    int64_t nr);

// out[j] = sum over k < K of h[k] * B[k][j] for j < columns, B packed by packGemmB into panels
// of nr = 16 or 32 columns: the recurrent product of one hidden state, many sums in flight.
using RecurrentGemv = void (*)(int64_t K, const float* h, const float* packed, int64_t nr, int64_t columns,
                               float* out);
#if defined(__x86_64__) || defined(_M_X64)
void f32_recurrent_gemv__avx2_fma(int64_t K, const float* h, const float* packed, int64_t nr, int64_t columns,
                                  float* out);
#endif
// The GEMV for the function table in use (so OSPREY_CPU_ISA applies to it too), or null where
// the table has no vector code: products then run through packedGemm.
RecurrentGemv recurrentGemv(const CpuFunctions& fn);

// One batch entry's rows for one step of one direction, each pointer at the first of the slice's
// `units` hidden units; a gate's row starts `hidden` floats after the previous gate's.
struct RecurrentCellRows {
  float* gates = nullptr;                 // h_prev . R^T (R's gate order), overwritten
  const float* projection = nullptr;      // x_t . W^T + the folded biases, same layout
  const float* hPrev = nullptr;
  float* hNext = nullptr;
  float* cell = nullptr;                  // LSTM's c, updated in place
  float* resetHidden = nullptr;           // GRU, linear_before_reset = 0: r * h_prev goes here
  const float* peepholes = nullptr;       // LSTM's P (i, o, f), or null
  const float* candidateBias = nullptr;   // GRU, linear_before_reset = 1: the candidate's Rb, or null
};

// The gate nonlinearities through the function table's vector sigmoid, tanh(x) being
// 2 sigmoid(2x) - 1; pre-activations are clipped to [-clip, clip] (+-infinity: no clip).
struct RecurrentCellMath {
  const CpuFunctions* fn = nullptr;
  int64_t hidden = 0;
  float clipLo = 0.f, clipHi = 0.f;
  bool inputForget = false;

  // h_next = tanh(gates + projection).
  void rnn(const RecurrentCellRows& r, int64_t units) const;
  // The LSTM cell (gates i, o, f, c): updates cell and writes h_next.
  void lstm(const RecurrentCellRows& r, int64_t units) const;
  // GRU's update and reset gates z and r; with linear_before_reset = 1 also the candidate and
  // h_next (the product's candidate part is h_prev . Rh^T), else only r * h_prev into resetHidden.
  void gruGates(const RecurrentCellRows& r, int64_t units, bool linearBeforeReset) const;
  // GRU with linear_before_reset = 0, once the candidate's product (r * h_prev) . Rh^T is in the
  // gates row: the candidate and h_next.
  void gruCandidate(const RecurrentCellRows& r, int64_t units) const;
};

}  // namespace osprey
