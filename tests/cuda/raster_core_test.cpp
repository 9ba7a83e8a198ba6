// Data-movement ops lowered to Raster, and Gather with run-time indices, on the device.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

TEST(CudaRaster, Transpose) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::Transpose);
  n.setInts("perm", {0, 2, 3, 1});
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 13, 7, 11}, 30))}, 1, 0, 1e-2);
}

TEST(CudaRaster, ConcatSliceAndPad) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node concat = makeNode(OpType::Concat);
  concat.setInt("axis", 1);
  expectCudaMatchesReference(concat, {in(randomTensor(DataType::Float32, {2, 3, 5}, 31)), in(randomTensor(DataType::Float32, {2, 7, 5}, 32)),
                                      in(randomTensor(DataType::Float32, {2, 1, 5}, 33))},
                             1, 0, 1e-2);
  expectCudaMatchesReference(makeNode(OpType::Slice),
                             {in(randomTensor(DataType::Float32, {5, 17, 9}, 34)), constant(makeTensor<int64_t>({2}, {1, 2})),
                              constant(makeTensor<int64_t>({2}, {15, 8})), constant(makeTensor<int64_t>({2}, {1, 2})),
                              constant(makeTensor<int64_t>({2}, {3, 2}))},
                             1, 0, 1e-2);
  expectCudaMatchesReference(makeNode(OpType::Pad), {in(randomTensor(DataType::Float32, {2, 3, 5}, 35)),
                                                     constant(makeTensor<int64_t>({6}, {0, 1, 2, 0, 2, 1})),
                                                     constant(makeTensor<float>({}, {0.5f}))},
                             1, 0, 1e-2);
}

TEST(CudaRaster, Int64Transpose) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::Transpose);
  n.setInts("perm", {1, 0});
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Int64, {13, 29}, 36, -100, 100))}, 1, 0, 0);
}

TEST(CudaGather, RuntimeIndices) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (int64_t axis : {0, 1}) {
    Node n = makeNode(OpType::Gather);
    n.setInt("axis", axis);
    expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {11, 13, 3}, 37)),
                                   in(makeTensor<int64_t>({2, 3}, {0, 5, -1, 3, 10, 2}))},
                               1, 0, 1e-2);
  }
}

}  // namespace
}  // namespace osprey::test
