// The fused Attention kernels against the reference kernel, in fp32 (float kernel) and fp16
// storage (the register-resident or the WMMA tensor-core kernel where the head size allows): the
// BERT form with 3-D inputs and an additive mask, grouped heads with a causal mask, a bool mask
// shorter than the keys, every head size of the register-resident kernel.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

Node attentionNode(int64_t qHeads, int64_t kvHeads) {
  Node n = makeNode(OpType::Attention);
  if (qHeads) n.setInt("q_num_heads", qHeads);
  if (kvHeads) n.setInt("kv_num_heads", kvHeads);
  return n;
}

TEST(CudaAttentionMath, ThreeDimensionalWithAdditiveMask) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = attentionNode(4, 4);
  Tensor mask = randomTensor(DataType::Float32, {2, 1, 1, 77}, 4, -3.0, 0.0);
  for (int64_t j = 70; j < 77; ++j) mask.data<float>()[j] = -10000.f;  // padded keys of batch 0
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 77, 64}, 1)),
                                 in(randomTensor(DataType::Float32, {2, 77, 64}, 2)),
                                 in(randomTensor(DataType::Float32, {2, 77, 64}, 3)), in(mask)});
}

TEST(CudaAttentionMath, GroupedHeadsCausalScaled) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = attentionNode(0, 0);
  n.setInt("is_causal", 1);
  n.setFloat("scale", 0.3f);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {1, 4, 70, 32}, 5)),
                                 in(randomTensor(DataType::Float32, {1, 2, 70, 32}, 6)),
                                 in(randomTensor(DataType::Float32, {1, 2, 70, 48}, 7))});
}

TEST(CudaAttentionMath, OddHeadSizeBoolMaskShorterThanKeys) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = attentionNode(0, 0);
  Tensor mask(DataType::Bool, {13, 40});
  for (int64_t i = 0; i < mask.elements(); ++i) static_cast<uint8_t*>(mask.data())[i] = (i * 7 % 5) != 0;
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 3, 13, 13}, 8)),
                                 in(randomTensor(DataType::Float32, {2, 3, 45, 13}, 9)),
                                 in(randomTensor(DataType::Float32, {2, 3, 45, 13}, 10)), in(mask)});
}

// The register-resident kernel's head sizes (32, 64, 96, 128; Q/K and V alike) with key counts
// that leave a partial 64-key tile, query rows that leave a partial 64-row block, grouped heads
// under a causal mask, and a bool mask.
TEST(CudaAttentionMath, RegisterResidentHeadSizesAndMasks) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (int64_t dim : {32, 64, 96, 128}) {
    SCOPED_TRACE("head size " + std::to_string(dim));
    Node causal = attentionNode(0, 0);
    causal.setInt("is_causal", 1);
    expectCudaMatchesReference(causal, {in(randomTensor(DataType::Float32, {1, 4, 131, dim}, 14)),
                                        in(randomTensor(DataType::Float32, {1, 2, 131, dim}, 15)),
                                        in(randomTensor(DataType::Float32, {1, 2, 131, dim}, 16))});
    Node masked = attentionNode(0, 0);
    Tensor mask(DataType::Bool, {67, 150});
    for (int64_t i = 0; i < mask.elements(); ++i) static_cast<uint8_t*>(mask.data())[i] = (i * 11 % 7) != 0;
    expectCudaMatchesReference(masked, {in(randomTensor(DataType::Float32, {2, 2, 67, dim}, 17)),
                                        in(randomTensor(DataType::Float32, {2, 2, 150, dim}, 18)),
                                        in(randomTensor(DataType::Float32, {2, 2, 150, dim}, 19)), in(mask)});
  }
}

TEST(CudaAttentionMath, BertShape) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = attentionNode(12, 12);
  Tensor mask(DataType::Float32, {2, 1, 1, 128});
  for (int64_t i = 0; i < mask.elements(); ++i) mask.data<float>()[i] = i >= 128 + 100 ? -10000.f : 0.f;
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 128, 768}, 11)),
                                 in(randomTensor(DataType::Float32, {2, 128, 768}, 12)),
                                 in(randomTensor(DataType::Float32, {2, 128, 768}, 13)), in(mask)});
}

}  // namespace
}  // namespace osprey::test
