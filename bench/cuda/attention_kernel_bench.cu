// Checks and times the fused attention kernels alone (no Osprey session), on the BERT-base
// shape by default: Q/K/V (1, 128, heads * 64) as the converter's Attention views them.
//   nvcc -std=c++17 -arch=sm_90 -I src bench/cuda/attention_kernel_bench.cu \
//        src/backends/cuda/math/attention_kernel.cu src/backends/cuda/math/attention_tensor_core.cu \
//        src/backends/cuda/math/attention_flash.cu -o attn_bench
//   ./attn_bench [heads=384] [seq=128] [dim=64]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/cuda/math/attention_kernel.h"

using namespace osprey::cuda_math;

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  const int heads = argc > 1 ? std::atoi(argv[1]) : 384, seq = argc > 2 ? std::atoi(argv[2]) : 128;
  const int dim = argc > 3 ? std::atoi(argv[3]) : 64;
  const int64_t hidden = int64_t(heads) * dim, count = seq * hidden;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> q(count), k(count), v(count), mask(seq);
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = dist(gen);
  for (int j = 0; j < seq; ++j) mask[j] = j % 7 == 3 ? -10000.f : 0.f;

  // Reference for a few heads, in double.
  const int checkedHeads = heads < 4 ? heads : 4;
  std::vector<double> ref(int64_t(seq) * checkedHeads * dim);
  const double scale = 1.0 / std::sqrt(double(dim));
  for (int h = 0; h < checkedHeads; ++h)
    for (int i = 0; i < seq; ++i) {
      std::vector<double> s(seq);
      double mx = -1e300, sum = 0;
      for (int j = 0; j < seq; ++j) {
        double d = 0;
        for (int c = 0; c < dim; ++c) d += double(q[i * hidden + h * dim + c]) * k[j * hidden + h * dim + c];
        s[j] = d * scale + mask[j];
        mx = std::max(mx, s[j]);
      }
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int c = 0; c < dim; ++c) {
        double o = 0;
        for (int j = 0; j < seq; ++j) o += s[j] / sum * v[j * hidden + h * dim + c];
        ref[(int64_t(h) * seq + i) * dim + c] = o;
      }
    }

  AttentionParams p;
  p.batch = 1;
  p.qHeads = p.kvHeads = heads;
  p.qSeq = p.kvSeq = seq;
  p.dim = p.vDim = dim;
  for (int64_t* s : {p.qStride, p.kStride, p.vStride, p.oStride}) {
    s[0] = count;
    s[1] = dim;
    s[2] = hidden;
  }
  p.maskKind = MaskKind::Additive;
  p.maskStride[3] = 1;
  p.maskLength = seq;
  p.scale = float(scale);

  for (ElementType type : {ElementType::F32, ElementType::F16}) {
    const size_t es = type == ElementType::F32 ? 4 : 2;
    std::vector<unsigned char> hq(count * es), hk(count * es), hv(count * es), hm(seq * es), ho(count * es);
    auto pack = [&](const std::vector<float>& src, std::vector<unsigned char>& dst) {
      for (size_t i = 0; i < src.size(); ++i) {
        if (type == ElementType::F32)
          reinterpret_cast<float*>(dst.data())[i] = src[i];
        else
          reinterpret_cast<__half*>(dst.data())[i] = __float2half(src[i]);
      }
    };
    pack(q, hq), pack(k, hk), pack(v, hv), pack(mask, hm);
    void *dq, *dk, *dv, *dm, *dout;
    for (auto [ptr, host] : {std::pair{&dq, &hq}, {&dk, &hk}, {&dv, &hv}, {&dm, &hm}, {&dout, &ho}}) {
      check(cudaMalloc(ptr, host->size()), "cudaMalloc");
      check(cudaMemcpy(*ptr, host->data(), host->size(), cudaMemcpyHostToDevice), "upload");
    }
    p.q = dq, p.k = dk, p.v = dv, p.mask = dm, p.o = dout;
    check(launchAttention(nullptr, type, p), "launch");
    check(cudaDeviceSynchronize(), "run");
    check(cudaMemcpy(ho.data(), dout, ho.size(), cudaMemcpyDeviceToHost), "download");
    double maxErr = 0;
    for (int h = 0; h < checkedHeads; ++h)
      for (int i = 0; i < seq; ++i)
        for (int c = 0; c < dim; ++c) {
          const int64_t at = i * hidden + h * dim + c;
          const double got = type == ElementType::F32 ? reinterpret_cast<float*>(ho.data())[at]
                                                      : __half2float(reinterpret_cast<__half*>(ho.data())[at]);
          maxErr = std::max(maxErr, std::fabs(got - ref[(int64_t(h) * seq + i) * dim + c]));
        }
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    const int loops = 50;
    cudaEventRecord(start);
    for (int i = 0; i < loops; ++i) launchAttention(nullptr, type, p);
    cudaEventRecord(stop);
    check(cudaEventSynchronize(stop), "timing");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    const double flops = 4.0 * heads * double(seq) * seq * dim;
    std::printf("%s heads %d seq %d dim %d: max |err| %.3g, %.1f us per call, %.1f TFLOP/s%s\n",
                type == ElementType::F32 ? "fp32" : "fp16", heads, seq, dim, maxErr, ms * 1000 / loops,
                flops / (ms / loops * 1e-3) / 1e12,
                attentionFlashEligible(type, p)        ? " (register-resident tensor cores)"
                : attentionTensorCoreEligible(type, p) ? " (WMMA tensor cores)"
                                                       : " (float kernel)");
    for (void* ptr : {dq, dk, dv, dm, dout}) cudaFree(ptr);
  }
  return 0;
}
