// CUDA reductions, Softmax, LayerNormalization and pooling against the reference kernels.
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

TEST(CudaReduce, AxisBlocksAndKeepdims) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  const std::vector<std::vector<int64_t>> axesList = {{-1}, {1}, {0}, {1, 2}, {0, 1, 2}};
  for (OpType type : {OpType::ReduceMean, OpType::ReduceSum, OpType::ReduceMax, OpType::ReduceMin, OpType::ReduceSumSquare,
                      OpType::ReduceL2, OpType::ReduceLogSumExp}) {
    for (const auto& axes : axesList) {
      for (int64_t keep : {0, 1}) {
        SCOPED_TRACE(std::string(opTypeName(type)) + " keepdims " + std::to_string(keep) + " axes " + shapeToString(axes));
        Node n = makeNode(type);
        n.setInt("keepdims", keep);
        expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 13, 67}, 20, -1, 1)),
                                       constant(makeTensor<int64_t>({static_cast<int64_t>(axes.size())}, axes))});
      }
    }
  }
}

// A long reduced axis over few outputs takes the column kernel (warps share the axis): channels
// not a multiple of 32, every kind that combines partial results differently.
TEST(CudaReduce, LongAxisOverFewOutputs) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (OpType type : {OpType::ReduceMean, OpType::ReduceSum, OpType::ReduceMax, OpType::ReduceMin, OpType::ReduceL2,
                      OpType::ReduceLogSumExp}) {
    SCOPED_TRACE(opTypeName(type));
    Node n = makeNode(type);
    n.setInt("keepdims", 0);
    expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 700, 45}, 40, -1, 1)),
                                   constant(makeTensor<int64_t>({1}, {1}))});
  }
  for (OpType type : {OpType::GlobalAveragePool, OpType::GlobalMaxPool})
    expectCudaMatchesReference(makeNode(type), {in(randomTensor(DataType::Float32, {2, 37, 33, 31}, 41))});
}

TEST(CudaReduce, GlobalPools) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (OpType type : {OpType::GlobalAveragePool, OpType::GlobalMaxPool})
    expectCudaMatchesReference(makeNode(type), {in(randomTensor(DataType::Float32, {2, 37, 7, 9}, 21))});
}

TEST(CudaSoftmax, InnerAndStridedAxes) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (int64_t axis : {-1, 1, 0}) {
    for (OpType type : {OpType::Softmax, OpType::LogSoftmax}) {
      SCOPED_TRACE(std::string(opTypeName(type)) + " axis " + std::to_string(axis));
      Node n = makeNode(type);
      n.setInt("axis", axis);
      expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 13, 129}, 22, -5, 5))});
    }
  }
}

TEST(CudaLayerNorm, WithAndWithoutBias) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  Node n = makeNode(OpType::LayerNormalization);
  n.setFloat("epsilon", 1e-5f);
  expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 13, 97}, 23, -3, 3)),
                                 constant(randomTensor(DataType::Float32, {97}, 24)), constant(randomTensor(DataType::Float32, {97}, 25))});
  Node noBias = makeNode(OpType::LayerNormalization);
  noBias.setInt("axis", 1);
  expectCudaMatchesReference(noBias, {in(randomTensor(DataType::Float32, {5, 3, 31}, 26)),
                                      constant(randomTensor(DataType::Float32, {3, 31}, 27))});
}

// Rows of whole 16-byte vectors take the register kernel: one to eight vectors per lane
// (n = 64 ... 1024 in fp32, 64 ... 2048 in fp16), a part-filled last vector round, and a row
// too long for it (the element-wise kernel).
TEST(CudaLayerNorm, RowsOfWholeVectors) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (int64_t n : {64, 96, 768, 1000, 1024, 2048, 4104}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Node ln = makeNode(OpType::LayerNormalization);
    ln.setFloat("epsilon", 1e-5f);
    expectCudaMatchesReference(ln, {in(randomTensor(DataType::Float32, {3, 11, n}, 31, -3, 3)),
                                    constant(randomTensor(DataType::Float32, {n}, 32)),
                                    constant(randomTensor(DataType::Float32, {n}, 33))});
  }
  Node noBias = makeNode(OpType::LayerNormalization);
  expectCudaMatchesReference(noBias, {in(randomTensor(DataType::Float32, {7, 256}, 34, -2, 2)),
                                      constant(randomTensor(DataType::Float32, {256}, 35))});
}

TEST(CudaPool, MaxAndAverageWithPadsAndCeilMode) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  for (OpType type : {OpType::MaxPool, OpType::AveragePool}) {
    for (int64_t ceil : {0, 1}) {
      for (int64_t includePad : {0, 1}) {
        SCOPED_TRACE(std::string(opTypeName(type)) + " ceil " + std::to_string(ceil) + " pad " + std::to_string(includePad));
        Node n = makeNode(type);
        n.setInts("kernel_shape", {3, 3});
        n.setInts("strides", {2, 2});
        n.setInts("pads", {1, 1, 1, 1});
        n.setInt("ceil_mode", ceil);
        if (type == OpType::AveragePool) n.setInt("count_include_pad", includePad);
        expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {2, 5, 13, 14}, 28))});
      }
    }
  }
}

// 2x2 and 3x3 windows without dilation take the unrolled kernel; the others the general one.
TEST(CudaPool, MaxPoolUnrolledAndGeneralWindows) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  struct Case {
    std::vector<int64_t> kernel, strides, pads, dilations;
  };
  for (const Case& c : {Case{{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}}, Case{{3, 3}, {1, 1}, {0, 1, 1, 0}, {1, 1}},
                        Case{{2, 2}, {1, 2}, {1, 1, 0, 0}, {1, 1}}, Case{{2, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
                        Case{{3, 3}, {2, 2}, {1, 1, 1, 1}, {2, 2}}}) {
    SCOPED_TRACE("kernel " + std::to_string(c.kernel[0]) + "x" + std::to_string(c.kernel[1]) + " stride " +
                 std::to_string(c.strides[0]) + "x" + std::to_string(c.strides[1]));
    Node n = makeNode(OpType::MaxPool);
    n.setInts("kernel_shape", c.kernel);
    n.setInts("strides", c.strides);
    n.setInts("pads", c.pads);
    n.setInts("dilations", c.dilations);
    expectCudaMatchesReference(n, {in(randomTensor(DataType::Float32, {3, 37, 19, 23}, 30))});
  }
}

}  // namespace
}  // namespace osprey::test

namespace osprey::test {
namespace {

TEST(CudaResize, NearestAndLinearWithScalesOrSizes) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  const Tensor x = randomTensor(DataType::Float32, {2, 3, 7, 9}, 29);
  for (const char* mode : {"nearest", "linear"}) {
    for (const char* coord : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
      SCOPED_TRACE(std::string(mode) + " " + coord);
      Node n = makeNode(OpType::Resize);
      n.setString("mode", mode);
      n.setString("coordinate_transformation_mode", coord);
      if (std::string(mode) == "nearest") n.setString("nearest_mode", "floor");
      expectCudaMatchesReference(n, {in(x), absent(), constant(makeTensor<float>({4}, {1.f, 1.f, 2.f, 1.5f}))});
      expectCudaMatchesReference(n, {in(x), absent(), absent(), constant(makeTensor<int64_t>({4}, {2, 3, 5, 20}))});
    }
  }
}

}  // namespace
}  // namespace osprey::test
