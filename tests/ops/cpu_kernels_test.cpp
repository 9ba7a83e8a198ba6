// The CPU backend's optimised kernels (src/backends/cpu/kernels/) against the reference kernels
// of src/ops on seeded random data, with shapes chosen to hit every tail of the 6x16 GEMM
// micro-kernel, its K blocking (K > 256) and the im2col / pointwise / grouped / depthwise paths.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/cpu_kernels.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "core/thread_pool.h"
#include "ops/activation.h"
#include "ops/op_def.h"
#include "cpu_conv_case.h"
#include "op_test_util.h"

namespace osprey::test {
namespace {

// The reference kernel of node's op, run directly (no backend involved).
Tensor reference(const Node& node, const std::vector<OpInput>& inputs) {
  std::vector<Tensor> outputs;
  Status st = referenceOp(node, inputs, 1, &outputs);
  EXPECT_TRUE(st) << st.message();
  return st ? outputs[0] : Tensor();
}

// Runs node through a Session (the CPU backend picks its kernel) and compares with the reference.
void checkAgainstReference(const Node& node, const std::vector<OpInput>& inputs, int threads = 1) {
  std::vector<Tensor> outputs;
  Status st = runOp(node, inputs, 1, &outputs, threads);
  ASSERT_TRUE(st) << st.message();
  Tensor expected = reference(node, inputs);
  ASSERT_EQ(outputs[0].shape(), expected.shape());
  expectNear(outputs[0], expected, 1e-4, 1e-4);
}

void setActivation(Node& node, FusedActivation::Kind kind, float a = 0.f, float b = 0.f) {
  FusedActivation act;
  act.kind = kind, act.a = a, act.b = b;
  act.store(node);
}

using ConvCase = CpuConvCase;

// Sets one kernel-choice switch (cpuKernelChoices(): winograd, directConv, tapConv,
// depthwiseLanes) for one scope, so that a test of one path keeps to it on shapes another path
// would take.
class KernelSwitch {
 public:
  KernelSwitch(bool CpuKernelChoices::*choice, bool on) : choice_(choice), old_(cpuKernelChoices().*choice) {
    cpuKernelChoices().*choice = on;
  }
  ~KernelSwitch() { cpuKernelChoices().*choice_ = old_; }

 private:
  bool CpuKernelChoices::*choice_;
  bool old_;
};

void checkConv(const ConvCase& k, uint32_t seed) {
  const BuiltConv conv = buildConvCase(k, seed);
  SCOPED_TRACE(describeConvCase(k));
  checkAgainstReference(conv.node, conv.inputs, k.threads);
}

using Kind = FusedActivation::Kind;

TEST(CpuKernels, ConvPointwiseTails) {
  // M and HW around the 6 x 16 register block: 1, 5, 6, 7, 13, 17, 127 output channels.
  uint32_t seed = 1;
  for (int64_t m : {1, 5, 6, 7, 13, 17, 127})
    for (int64_t hw : {1, 4, 5, 13})
      checkConv({1, 7, hw, hw, m, 1, 1, 1, 1, 0, 1, m % 2 == 1, Kind::None}, seed++);
}

TEST(CpuKernels, ConvThinColumns) {
  // 1 to 4 output positions (squeeze-and-excitation 1x1 convolutions) run a GEMV per column.
  uint32_t seed = 5;
  for (int64_t w : {1, 2, 3, 4, 5}) {
    checkConv({1, 300, 1, w, 37, 1, 1, 1, 1, 0, 1, true, Kind::Relu}, seed++);
    checkConv({2, 48, 1, w, 1152, 1, 1, 1, 1, 0, 1, true, Kind::Sigmoid}, seed++);
  }
}

TEST(CpuKernels, ConvPointwiseDeepK) {
  // K > 256 crosses the micro-kernel's K blocking; batch 2.
  checkConv({2, 300, 7, 9, 13, 1, 1, 1, 1, 0, 1, true, Kind::Relu}, 11);
  checkConv({1, 513, 5, 5, 19, 1, 1, 1, 1, 0, 1, true, Kind::None}, 12);
}

TEST(CpuKernels, ConvPointwiseSmallMapPositions) {
  // 14x14 and 7x7 maps with channels in multiples of 32 take positions as the GEMM's rows
  // (preferPositionRows): 196 rows end in a 4-row tail, 49 in a 1-row one; K across the kc block,
  // a partial panel of channels (112), residual and Relu, two threads.
  uint32_t seed = 30;
  checkConv({1, 112, 14, 14, 96, 1, 1, 1, 1, 0, 1, true, Kind::Relu, true, 2}, seed++);
  checkConv({1, 40, 14, 14, 672, 1, 1, 1, 1, 0, 1, true, Kind::None, false, 2}, seed++);
  checkConv({1, 300, 14, 14, 112, 1, 1, 1, 1, 0, 1, true, Kind::Relu, true, 2}, seed++);
  checkConv({1, 96, 7, 7, 160, 1, 1, 1, 1, 0, 1, false, Kind::Clip, false, 2}, seed++);
  // K deep enough for the 16-wide tile's margin on 14x14 too (196 rows in blocks of 5-6).
  checkConv({1, 576, 14, 14, 96, 1, 1, 1, 1, 0, 1, true, Kind::Clip, true, 2}, seed++);
}

TEST(CpuKernels, ConvIm2col) {
  KernelSwitch off(&CpuKernelChoices::winograd, false);
  KernelSwitch tapsOff(&CpuKernelChoices::tapConv, false);
  KernelSwitch directOff(&CpuKernelChoices::directConv, false);
  uint32_t seed = 20;
  checkConv({1, 3, 13, 13, 7, 3, 3, 1, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 5, 13, 11, 17, 3, 3, 1, 2, 1, 1, true, Kind::Clip}, seed++);        // strided, padded
  checkConv({2, 3, 17, 17, 13, 7, 7, 1, 2, 3, 1, false, Kind::None}, seed++);       // stem-like
  checkConv({1, 4, 12, 12, 6, 3, 3, 1, 1, 2, 2, true, Kind::LeakyRelu}, seed++);    // dilated
  checkConv({1, 8, 13, 13, 16, 1, 1, 1, 2, 0, 1, true, Kind::None}, seed++);        // strided 1x1
  checkConv({1, 40, 9, 9, 23, 3, 3, 1, 1, 1, 1, true, Kind::Sigmoid}, seed++);      // K = 360 > 256
  checkConv({1, 3, 5, 6, 4, 2, 3, 1, 1, 0, 1, true, Kind::HardSwish}, seed++);      // non-square kernel
  checkConv({1, 3, 41, 39, 8, 3, 3, 1, 2, 1, 1, true, Kind::Clip}, seed++);         // stride 2 gathers, odd width
  checkConv({1, 2, 23, 26, 5, 3, 3, 1, 3, 1, 1, true, Kind::Relu}, seed++);         // stride 3: the generic gather
  checkConv({1, 3, 19, 21, 6, 3, 3, 1, 2, 2, 2, true, Kind::None}, seed++);         // stride 2 phases, dilated
  checkConv({1, 3, 9, 70, 8, 3, 3, 1, 2, 1, 1, true, Kind::Clip}, seed++);          // stride 2 phases, wide rows
  checkConv({1, 8, 5, 75, 16, 1, 1, 1, 2, 0, 1, true, Kind::None}, seed++);         // strided 1x1, wide odd rows
  checkConv({1, 5, 16, 17, 9, 5, 5, 1, 2, 0, 1, true, Kind::Relu, false, 1, {1, 2, 2, 1}}, seed++);  // odd pads
}

// Precision::High leaves out the Winograd kernel, whose transforms round beyond plain fp32: its
// output is the GEMM path's, bit for bit, where Normal's differs.
TEST(CpuKernels, HighPrecisionLeavesOutWinograd) {
  Node conv = makeNode(OpType::Conv);
  conv.setInts("pads", {1, 1, 1, 1});
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(conv, {in(randomTensor(DataType::Float32, {1, 32, 14, 14}, 7)),
                                   constant(randomTensor(DataType::Float32, {32, 32, 3, 3}, 8))}, 1, &feeds);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  auto runAt = [&](BackendConfig::Precision precision) {
    BackendConfig config;
    config.precision = precision;
    std::unique_ptr<Session> session;
    std::vector<Tensor> out;
    EXPECT_TRUE(interp->createSession(ScheduleConfig(), config, &session).isOk());
    EXPECT_TRUE(session->run(feeds, &out).isOk());
    return out.at(0);
  };
  const Tensor normal = runAt(BackendConfig::Precision::Normal);
  const Tensor high = runAt(BackendConfig::Precision::High);
  Tensor gemm;
  {
    KernelSwitch off(&CpuKernelChoices::winograd, false);
    gemm = runAt(BackendConfig::Precision::Normal);
  }
  EXPECT_EQ(std::memcmp(high.data(), gemm.data(), gemm.bytes()), 0);
  EXPECT_NE(std::memcmp(normal.data(), gemm.data(), gemm.bytes()), 0);  // Normal took Winograd
}

TEST(CpuKernels, ConvIm2colStripes) {
  KernelSwitch off(&CpuKernelChoices::winograd, false);
  KernelSwitch tapsOff(&CpuKernelChoices::tapConv, false);
  KernelSwitch directOff(&CpuKernelChoices::directConv, false);
  // Deep K makes the L2-sized stripes of output positions one GEMM panel wide, so these run
  // per-thread stripes (the last one partial) rather than one whole im2col matrix.
  uint32_t seed = 30;
  checkConv({1, 600, 19, 23, 11, 3, 3, 1, 1, 1, 1, true, Kind::Relu}, seed++);   // 437 positions
  checkConv({2, 300, 41, 37, 9, 3, 3, 1, 2, 1, 1, false, Kind::None}, seed++);   // strided, batch 2
  checkConv({1, 150, 30, 29, 7, 5, 5, 1, 1, 2, 1, true, Kind::Clip}, seed++);    // 5x5, rows split mid-way
  checkConv({1, 300, 33, 33, 6, 3, 3, 3, 1, 1, 2, true, Kind::None}, seed++);    // grouped, dilated
  // Shallow columns (a stem's 3 input channels) on large maps: stripes of a quarter of a
  // thread's positions, the last one partial, stride 1 and 2.
  checkConv({1, 3, 65, 67, 8, 3, 3, 1, 1, 1, 1, true, Kind::Clip}, seed++);
  checkConv({1, 3, 130, 134, 13, 3, 3, 1, 2, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 3, 130, 134, 13, 3, 3, 1, 2, 1, 1, false, Kind::None, true}, seed++);
}

// Few input channels (stems) run the direct kernel where the table has one: 1-4 channels, strides
// 1 and 2, output rows of 15-17, 33 and 111 columns (masked last steps, a row edge inside a step),
// Swish fused into the Conv (the converter folds x * Sigmoid(x) after a Conv into it) through
// every algorithm: 1x1 with channels or positions as rows, im2col, Winograd, depthwise, the
// direct stem, the residual; alpha 1 runs the table's vector kernel, other alphas the scalar one.
TEST(CpuKernels, ConvSwish) {
  uint32_t seed = 900;
  const ConvCase cases[] = {
      {1, 16, 13, 17, 40, 1, 1, 1, 1, 0, 1, true, Kind::Swish},            // 1x1, channels as rows
      {1, 300, 7, 7, 64, 1, 1, 1, 1, 0, 1, true, Kind::Swish, true},       // positions as rows, residual
      {1, 5, 13, 11, 17, 3, 3, 1, 2, 1, 1, true, Kind::Swish},             // im2col, strided
      {1, 16, 20, 22, 24, 3, 3, 1, 1, 1, 1, true, Kind::Swish, false, 2},  // Winograd
      {1, 24, 15, 16, 24, 3, 3, 24, 2, 1, 1, true, Kind::Swish},           // depthwise
      {1, 3, 20, 35, 16, 3, 3, 1, 2, 1, 1, true, Kind::Swish},             // direct stem
  };
  for (const ConvCase& k : cases) {
    checkConv(k, seed++);
    BuiltConv conv = buildConvCase(k, seed++);
    setActivation(conv.node, Kind::Swish, 0.5f);
    SCOPED_TRACE(describeConvCase(k) + " alpha 0.5");
    checkAgainstReference(conv.node, conv.inputs, k.threads);
  }
}

// 1 to 40 output channels (a last partial block of 16), padding on any side (whole padding rows
// skipped), every epilogue, batch 2, two threads; dilation 2 and a residual fall back to im2col.
TEST(CpuKernels, ConvDirect) {
  uint32_t seed = 800;
  checkConv({1, 3, 9, 33, 16, 3, 3, 1, 2, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 3, 20, 222, 17, 3, 3, 1, 2, 0, 1, true, Kind::None}, seed++);       // 111 columns
  checkConv({2, 3, 19, 31, 24, 7, 7, 1, 2, 3, 1, false, Kind::Clip, false, 2}, seed++);
  checkConv({1, 1, 7, 15, 1, 3, 3, 1, 1, 1, 1, true, Kind::Sigmoid}, seed++);
  checkConv({1, 2, 8, 16, 40, 5, 3, 1, 1, 0, 1, true, Kind::HardSwish, false, 2, {2, 0, 1, 1}}, seed++);
  checkConv({1, 4, 6, 17, 7, 1, 1, 1, 1, 0, 1, true, Kind::LeakyRelu}, seed++);      // 1x1
  checkConv({1, 3, 12, 34, 5, 4, 4, 1, 2, 0, 1, true, Kind::Relu, false, 1, {0, 3, 3, 0}}, seed++);
  checkConv({1, 3, 4, 20, 16, 3, 3, 1, 1, 2, 1, true, Kind::None}, seed++);          // 2 padding rows
  checkConv({1, 3, 13, 13, 8, 3, 3, 1, 1, 1, 2, true, Kind::Relu}, seed++);          // dilated: im2col
  checkConv({1, 3, 13, 13, 8, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true}, seed++);    // residual: im2col
  // Groups of 16 or 32 outputs over up to 16 inputs, group by group: strides 1 and 2, 3x3 and 5x5,
  // odd maps, batch 2, a fused activation applied per row, two threads.
  checkConv({1, 64, 29, 31, 64, 3, 3, 4, 1, 1, 1, true, Kind::Relu, false, 2}, seed++);
  checkConv({2, 24, 17, 19, 48, 3, 3, 3, 2, 1, 1, false, Kind::HardSwish, false, 2}, seed++);
  checkConv({1, 10, 11, 23, 64, 5, 5, 2, 1, 2, 1, true, Kind::None}, seed++);
  checkConv({1, 48, 9, 9, 32, 3, 3, 2, 1, 1, 1, true, Kind::Sigmoid, false, 3}, seed++);  // 24 inputs: im2col
}

// The direct row kernel of the selected and the scalar table against the sum computed here, with
// padding rows (null) and columns on both sides (a window wider than the row, pads past the
// window), both strides, windows 1-16 wide (3 and 7 have unrolled twins in the AVX2 kernel), rows
// of 1-226 outputs (every tail of a 16-column step), up to 64 window rows (the AVX2 kernel's
// copied rows then take several chunks of columns), 1-40 channels (partial blocks of 16) and a
// right edge that stops before the last full window.
TEST(CpuKernels, DirectConvRowTablesAgree) {
  struct Case {
    int64_t inW, kernelW, rowCount, outChannels, padW, rightCut;
  };
  const Case cases[] = {{37, 5, 6, 21, 2, 0},   {224, 3, 9, 32, 1, 0},  {229, 7, 21, 24, 3, 0}, {40, 16, 64, 5, 7, 0},
                        {5, 3, 3, 17, 4, 0},    {300, 1, 4, 7, 0, 0},   {60, 7, 14, 40, 3, 2},  {12, 3, 2, 1, 0, 0},
                        {51, 4, 8, 16, 1, 1},   {3, 7, 1, 6, 3, 0}};
  uint32_t seed = 41;
  for (const Case& k : cases)
    for (int64_t stride : {1, 2}) {
      const int64_t blocks = (k.outChannels + kDirectConvBlock - 1) / kDirectConvBlock;
      Tensor xT = randomTensor(DataType::Float32, {k.rowCount, k.inW}, seed++);
      Tensor wT = randomTensor(DataType::Float32, {blocks, k.rowCount, k.kernelW, kDirectConvBlock}, seed++);
      Tensor biasT = randomTensor(DataType::Float32, {k.outChannels}, seed++);
      std::vector<const float*> rows;
      for (int64_t r = 0; r < k.rowCount; ++r) rows.push_back(r % 5 == 2 ? nullptr : xT.data<float>() + r * k.inW);
      DirectConvRowArgs args;
      args.rowCount = k.rowCount, args.inW = k.inW, args.kernelW = k.kernelW, args.stride = stride, args.padW = k.padW;
      args.outW = (k.inW + 2 * k.padW - k.kernelW) / stride + 1 - k.rightCut;
      args.outChannels = k.outChannels, args.outPlaneStride = args.outW + 9;
      args.lo = -0.5f, args.hi = 0.75f;
      for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
        if (!fn->directConvRow) continue;
        SCOPED_TRACE(::testing::Message() << fn->isa << " inW " << k.inW << " kernelW " << k.kernelW << " rows "
                                          << k.rowCount << " channels " << k.outChannels << " stride " << stride);
        std::vector<float> y(k.outChannels * args.outPlaneStride, 9.f);
        fn->directConvRow(args, rows.data(), wT.data<float>(), biasT.data<float>(), y.data());
        int failures = 0;
        for (int64_t o = 0; o < k.outChannels && failures < 5; ++o)
          for (int64_t ow = 0; ow < args.outPlaneStride && failures < 5; ++ow) {
            const float got = y[o * args.outPlaneStride + ow];
            if (ow >= args.outW) {
              EXPECT_EQ(got, 9.f) << "wrote past the row: o " << o << " ow " << ow;
              failures += got != 9.f;
              continue;
            }
            double want = biasT.data<float>()[o];
            for (int64_t r = 0; r < k.rowCount; ++r)
              for (int64_t kw = 0; rows[r] && kw < k.kernelW; ++kw) {
                const int64_t col = ow * stride + kw - args.padW;
                if (col >= 0 && col < k.inW)
                  want += double(rows[r][col]) *
                          wT.data<float>()[(((o / 16) * k.rowCount + r) * k.kernelW + kw) * kDirectConvBlock + o % 16];
              }
            want = std::min<double>(args.hi, std::max<double>(args.lo, want));
            const bool near = std::fabs(got - want) <= 1e-5;
            EXPECT_TRUE(near) << "o " << o << " ow " << ow << ": " << got << ", expected " << want;
            failures += !near;
          }
      }
    }
}

// Positions-as-rows results moved into planes by both tables: 16 and fewer channels (around the
// AVX2 kernel's 8-channel step), position counts around the 8- and 16-wide steps, with and without
// bias and residual; nothing written past them.
TEST(CpuKernels, TransposeToPlanesTablesAgree) {
  const int64_t lds = 21, ldy = 40;
  Tensor srcT = randomTensor(DataType::Float32, {37, lds}, 51);
  Tensor biasT = randomTensor(DataType::Float32, {16}, 52);
  Tensor residualT = randomTensor(DataType::Float32, {16, ldy}, 53);
  for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
    if (!fn->transposeToPlanes) continue;
    for (int64_t channels : {16, 12, 8, 5})
      for (int64_t positions : {1, 7, 8, 16, 17, 37})
        for (bool extras : {false, true}) {
          std::vector<float> y(16 * ldy, 9.f);
          const float* bias = extras ? biasT.data<float>() : nullptr;
          const float* residual = extras ? residualT.data<float>() : nullptr;
          fn->transposeToPlanes(srcT.data<float>(), lds, positions, channels, bias, residual, -0.5f, 0.75f, y.data(),
                                ldy);
          for (int64_t c = 0; c < 16; ++c)
            for (int64_t p = 0; p < ldy; ++p) {
              float want = 9.f;
              if (c < channels && p < positions) {
                want = srcT.data<float>()[p * lds + c] + (bias ? bias[c] : 0.f) + (residual ? residual[c * ldy + p] : 0.f);
                want = std::min(0.75f, std::max(-0.5f, want));
              }
              EXPECT_NEAR(y[c * ldy + p], want, 1e-6) << fn->isa << " channels " << channels << " positions "
                                                      << positions << " c " << c << " p " << p;
            }
        }
  }
}

// Winograd F(2x2, 3x3): odd output sizes (a last tile of one column or row), no padding, one-sided
// padding, batch 2, two threads, K blocking (Cin > 256), every epilogue. Small maps run tiles as
// rows (odd widths transposed row by row, an even width with an odd height as one run, channel
// counts off 16 and off 8), with the 16-wide tile only where the tiles leave a partial block of 16
// (not the 7x7 and 8x8 outputs' 16 tiles); the larger ones channels as rows.
TEST(CpuKernels, ConvWinograd) {
  KernelSwitch on(&CpuKernelChoices::winograd, true);
  uint32_t seed = 700;
  checkConv({1, 9, 13, 11, 13, 3, 3, 1, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({2, 16, 15, 17, 8, 3, 3, 1, 1, 0, 1, false, Kind::None, false, 2}, seed++);
  checkConv({1, 12, 16, 16, 20, 3, 3, 1, 1, 1, 1, true, Kind::Clip, true, 2}, seed++);
  checkConv({1, 8, 14, 19, 9, 3, 3, 1, 1, 0, 1, true, Kind::Sigmoid, false, 1, {1, 0, 0, 1}}, seed++);
  checkConv({1, 8, 17, 12, 8, 3, 3, 1, 1, 0, 1, true, Kind::LeakyRelu, true, 2, {0, 1, 1, 0}}, seed++);
  checkConv({1, 300, 12, 12, 17, 3, 3, 1, 1, 1, 1, true, Kind::None, true, 2}, seed++);
  checkConv({1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true, 2}, seed++);  // 4 KiB-multiple strides
  // The fewest tiles Winograd takes: 7x7 (a last tile of one row and column) and 8x8 outputs.
  checkConv({1, 40, 7, 7, 48, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true, 2}, seed++);
  checkConv({1, 33, 10, 10, 20, 3, 3, 1, 1, 0, 1, true, Kind::None, false, 2}, seed++);
  // Past 256 tiles the channels stay the GEMM's rows: odd sizes, batch 2.
  checkConv({1, 9, 35, 33, 13, 3, 3, 1, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({2, 8, 33, 40, 9, 3, 3, 1, 1, 1, 1, true, Kind::Sigmoid, true, 2}, seed++);
}

// Small maps with channels that fill the column blocks (32 or 16 wide) and a K deep enough to pay
// for the transpose run output positions as the GEMM's rows (7x7: 49 positions in 7 blocks of 7,
// or 9 blocks of 5-6) and transpose into NCHW: pointwise and im2col, a last partial block of rows
// (9 and 49 positions) and of columns (120 channels), K > 256, batch 2, groups, the residual and
// two threads.
TEST(CpuKernels, ConvPositionRows) {
  KernelSwitch off(&CpuKernelChoices::winograd, false);
  KernelSwitch tapsOff(&CpuKernelChoices::tapConv, false);
  uint32_t seed = 60;
  checkConv({1, 170, 7, 7, 64, 1, 1, 1, 1, 0, 1, true, Kind::Relu}, seed++);
  checkConv({2, 300, 7, 7, 120, 1, 1, 1, 1, 0, 1, true, Kind::None, true, 2}, seed++);
  checkConv({1, 64, 3, 3, 64, 1, 1, 1, 1, 0, 1, false, Kind::Sigmoid}, seed++);
  checkConv({1, 40, 9, 9, 64, 3, 3, 1, 1, 1, 1, true, Kind::LeakyRelu}, seed++);
  checkConv({1, 30, 14, 14, 64, 3, 3, 1, 2, 1, 1, true, Kind::Clip, true, 2}, seed++);
  checkConv({1, 400, 7, 7, 128, 1, 1, 2, 1, 0, 1, true, Kind::Relu}, seed++);
}

// The implicit GEMM over the window's taps (AVX2 and AVX-512; elsewhere these run im2col or
// Winograd): strides 1 and 2, 3x3 / 5x5 / 7x7 / 1x3 windows, odd and one-sided pads, output rows
// cut into blocks of every size up to 8 positions (1-15, 28, 31, 32, 36 and 55 wide; 7 wide
// declined with 6-position blocks), 16-300 input channels (K up to 2700 in one pass of the
// micro-kernel), 16-96 output channels (48: panels of 16 only), batch 2, the residual, clamped
// and other activations, 1-3 threads and a pool with more work items than threads.
TEST(CpuKernels, ConvTaps) {
  uint32_t seed = 1300;
  const ConvCase cases[] = {
      {1, 16, 55, 55, 64, 3, 3, 1, 1, 1, 1, true, Kind::Relu, false, 2},
      {1, 16, 9, 15, 32, 3, 3, 1, 1, 1, 1, false, Kind::None},
      {2, 40, 14, 14, 64, 3, 3, 1, 2, 1, 1, true, Kind::Clip, true, 2},
      {1, 100, 15, 13, 96, 3, 3, 1, 2, 1, 1, true, Kind::Sigmoid, false, 3},
      {1, 256, 8, 8, 32, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true, 2},
      {1, 300, 7, 7, 64, 3, 3, 1, 1, 1, 1, true, Kind::None, false, 2},
      {1, 300, 5, 3, 32, 3, 3, 1, 2, 1, 1, true, Kind::Relu},
      {1, 24, 20, 19, 32, 5, 5, 1, 2, 2, 1, true, Kind::LeakyRelu, false, 2},
      {1, 12, 17, 18, 32, 7, 7, 1, 2, 3, 1, false, Kind::None, true},
      {1, 20, 6, 31, 32, 1, 3, 1, 1, 0, 1, true, Kind::Relu, false, 1, {0, 1, 0, 1}},
      {1, 20, 12, 11, 64, 3, 3, 1, 2, 0, 1, true, Kind::Relu, true, 2, {1, 0, 0, 1}},
      {1, 8, 3, 2, 32, 3, 3, 1, 1, 1, 1, true, Kind::Clip},
      // Stride-2 rows past 32 and 64 columns.
      {1, 16, 9, 71, 32, 3, 3, 1, 2, 1, 1, true, Kind::Relu},
      {1, 16, 8, 66, 32, 3, 3, 1, 2, 0, 1, false, Kind::None, false, 2},
      // Rows of 1, 3 and 13 outputs (one block of 1 or 3; 4 + 4 + 5), 16 and 48 output channels.
      {1, 16, 6, 1, 32, 3, 3, 1, 1, 1, 1, true, Kind::Relu},
      {1, 24, 5, 3, 48, 3, 3, 1, 1, 1, 1, false, Kind::None, true},
      {1, 20, 9, 13, 16, 3, 3, 1, 1, 1, 1, true, Kind::Clip, false, 2},
  };
  for (const ConvCase& k : cases) checkConv(k, seed++);
}

TEST(CpuKernels, ConvGrouped) {
  uint32_t seed = 40;
  checkConv({1, 12, 13, 13, 18, 3, 3, 3, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({2, 8, 7, 7, 8, 1, 1, 4, 1, 0, 1, false, Kind::None}, seed++);
  checkConv({1, 6, 11, 11, 12, 3, 3, 2, 2, 1, 1, true, Kind::None}, seed++);
  // Groups striped together: several stripes per group (40x40 outputs, K = 144), stripes of
  // several groups per thread, residual and activation per group, batch 2, odd thread counts.
  checkConv({1, 64, 40, 41, 64, 3, 3, 4, 1, 1, 1, true, Kind::HardSwish, false, 2}, seed++);
  checkConv({2, 56, 15, 13, 56, 3, 3, 7, 1, 1, 1, true, Kind::Relu, true, 3}, seed++);
  checkConv({1, 24, 9, 9, 48, 3, 3, 3, 1, 1, 2, false, Kind::None, true, 2}, seed++);
  // Stride 1 with the output as wide as the input: whole rows of a stripe copied as one run
  // (dilated, and with stripes that start and end mid-row).
  checkConv({1, 96, 21, 19, 12, 3, 3, 2, 1, 2, 2, true, Kind::None}, seed++);
  checkConv({1, 64, 56, 57, 64, 3, 3, 4, 1, 1, 1, false, Kind::Relu, false, 1}, seed++);
}

TEST(CpuKernels, ConvDepthwise) {
  uint32_t seed = 60;
  checkConv({1, 13, 13, 13, 13, 3, 3, 13, 1, 1, 1, true, Kind::Clip}, seed++);
  checkConv({2, 7, 17, 15, 7, 3, 3, 7, 2, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 5, 12, 12, 5, 5, 5, 5, 2, 2, 1, false, Kind::Sigmoid}, seed++);
  checkConv({1, 4, 9, 9, 8, 3, 3, 4, 1, 2, 2, true, Kind::None}, seed++);  // channel multiplier 2, dilated
  checkConv({1, 3, 1, 1, 3, 3, 3, 3, 1, 1, 1, true, Kind::None}, seed++);  // all padding
  // Planes wide enough for the vectorised interior (eight outputs per step) plus its tails.
  checkConv({1, 4, 29, 41, 4, 3, 3, 4, 2, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 3, 30, 50, 3, 3, 3, 3, 2, 0, 1, true, Kind::None}, seed++);
  checkConv({1, 2, 20, 37, 2, 3, 3, 2, 1, 1, 1, false, Kind::Clip}, seed++);
  checkConv({1, 2, 6, 25, 2, 3, 17, 2, 1, 1, 1, true, Kind::None}, seed++);  // wider than 16 taps
  // 5x5 (EfficientNet): interior columns in registers, borders tap by tap, strides 1 and 2.
  checkConv({1, 6, 14, 14, 6, 5, 5, 6, 1, 2, 1, true, Kind::Relu}, seed++);
  checkConv({1, 5, 7, 7, 5, 5, 5, 5, 1, 2, 1, true, Kind::None}, seed++);
  checkConv({2, 3, 28, 31, 3, 5, 5, 3, 2, 2, 1, true, Kind::Clip}, seed++);
  checkConv({1, 3, 11, 9, 3, 5, 5, 3, 1, 0, 1, false, Kind::None}, seed++);
  checkConv({1, 2, 4, 4, 2, 5, 5, 2, 1, 2, 1, true, Kind::None}, seed++);  // smaller than the window
  checkConv({1, 2, 13, 45, 4, 5, 5, 2, 2, 1, 1, true, Kind::None}, seed++);  // multiplier 2, odd pad
  // Planes larger than one padded band (48 KiB) run in several bands of rows, stride 2 with the
  // columns de-interleaved: odd and even left pads, row counts that leave a partial last band.
  checkConv({1, 2, 120, 130, 2, 3, 3, 2, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 1, 115, 117, 1, 5, 5, 1, 2, 2, 1, true, Kind::None}, seed++);
  checkConv({1, 2, 301, 37, 2, 3, 3, 2, 2, 1, 1, true, Kind::Clip}, seed++);
  checkConv({1, 2, 262, 45, 2, 5, 5, 2, 2, 1, 1, false, Kind::None}, seed++);
  checkConv({1, 2, 250, 40, 2, 3, 3, 2, 2, 0, 1, true, Kind::Relu}, seed++);
  checkConv({1, 2, 255, 53, 2, 5, 5, 2, 1, 2, 1, true, Kind::None}, seed++);
  // Rows too wide for a band of K padded rows take the border-checked path, as does stride 3.
  checkConv({1, 1, 4, 4200, 1, 3, 3, 1, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 1, 7, 2600, 1, 5, 5, 1, 2, 2, 1, true, Kind::None}, seed++);
  checkConv({1, 2, 40, 33, 2, 3, 3, 2, 3, 1, 1, true, Kind::None}, seed++);
}

// One output channel per input channel runs in blocks of 8 channels (NC8HW8 row kernel on a
// zero-padded band): channel counts with a partial last block, small maps whose rows are shorter
// than a vector, bands of rows on large maps, strides, dilation, uneven pads, batch 2, the
// residual before Relu / Clip, an activation after, and two threads sharing the tasks.
TEST(CpuKernels, ConvDepthwiseChannelBlocks) {
  KernelSwitch lanesOff(&CpuKernelChoices::depthwiseLanes, false);
  uint32_t seed = 80;
  checkConv({1, 19, 7, 7, 19, 5, 5, 19, 1, 2, 1, true, Kind::None}, seed++);
  checkConv({1, 8, 7, 7, 8, 3, 3, 8, 1, 1, 1, false, Kind::Relu}, seed++);
  checkConv({2, 9, 14, 14, 9, 5, 5, 9, 2, 2, 1, true, Kind::Clip}, seed++);
  checkConv({1, 17, 13, 11, 17, 3, 3, 17, 2, 0, 1, true, Kind::None}, seed++);  // no padding, odd sizes
  checkConv({1, 12, 15, 9, 12, 3, 3, 12, 1, 2, 2, true, Kind::Relu}, seed++);   // dilated
  checkConv({1, 10, 9, 10, 10, 3, 3, 10, 2, 0, 1, true, Kind::None, false, 1, {1, 0, 0, 1}}, seed++);
  checkConv({1, 24, 113, 57, 24, 3, 3, 24, 2, 1, 1, true, Kind::Relu, false, 2}, seed++);  // bands, stride 2
  checkConv({1, 11, 150, 150, 11, 3, 3, 11, 1, 1, 1, true, Kind::Clip, false, 2}, seed++);  // bands, stride 1
  checkConv({1, 13, 60, 70, 13, 5, 5, 13, 1, 2, 1, false, Kind::Sigmoid, true, 2}, seed++);  // residual, then activation
  checkConv({1, 21, 7, 7, 21, 5, 5, 21, 1, 2, 1, true, Kind::Clip, true}, seed++);  // residual before the clamp
  checkConv({1, 9, 3, 2, 9, 5, 5, 9, 2, 2, 1, true, Kind::None}, seed++);  // map smaller than the window
  checkConv({1, 16, 9, 2000, 16, 3, 3, 16, 1, 1, 1, true, Kind::Relu}, seed++);  // rows wider than a band
}

// 3x3 stride-1 convolutions whose output has the input's size take the flat kernel where the
// table has one (AVX-512): 16 consecutive positions per vector across row ends, so rows shorter
// than a vector, widths that are not multiples of 16 (the wrap into the next row must be masked),
// a single position, dilation 2 with padding 2, a channel multiplier, batch 2, the residual before
// Relu / Clip, an activation after, and two threads.
TEST(CpuKernels, ConvDepthwiseFlatPlanes) {
  KernelSwitch lanesOff(&CpuKernelChoices::depthwiseLanes, false);
  uint32_t seed = 100;
  checkConv({1, 9, 7, 7, 9, 3, 3, 9, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 8, 14, 14, 8, 3, 3, 8, 1, 1, 1, true, Kind::Clip, false, 2}, seed++);
  checkConv({2, 5, 13, 11, 5, 3, 3, 5, 1, 1, 1, false, Kind::None}, seed++);
  checkConv({1, 3, 5, 3, 3, 3, 3, 3, 1, 1, 1, true, Kind::None}, seed++);
  checkConv({1, 3, 2, 17, 3, 3, 3, 3, 1, 1, 1, true, Kind::Relu, true}, seed++);
  checkConv({1, 2, 1, 1, 2, 3, 3, 2, 1, 1, 1, true, Kind::None}, seed++);
  checkConv({1, 4, 15, 21, 4, 3, 3, 4, 1, 2, 2, true, Kind::Relu}, seed++);  // dilated, the same size
  checkConv({1, 3, 9, 9, 6, 3, 3, 3, 1, 1, 1, true, Kind::Clip, true}, seed++);  // multiplier 2
  checkConv({1, 6, 57, 33, 6, 3, 3, 6, 1, 1, 1, true, Kind::Sigmoid, true, 2}, seed++);
}

// 3x3 and 5x5 stride-2 depthwise convolutions with outputs at least 8 wide take the strided
// kernel where the table has one (AVX-512), reading the planes in place: outputs 8, 16, 17 and 56
// wide (one vector, a masked tail, several), odd and even input widths, padding 0-2 (the first
// window reaching left of the plane, the last past its right end), one-sided padding, a channel
// multiplier, batch 2, the residual before Relu / Clip, an activation after, two threads.
TEST(CpuKernels, ConvDepthwiseStride2Planes) {
  uint32_t seed = 150;
  checkConv({1, 5, 16, 16, 5, 3, 3, 5, 2, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 4, 33, 35, 4, 3, 3, 4, 2, 1, 1, true, Kind::Clip, true, 2}, seed++);
  checkConv({2, 3, 20, 34, 3, 3, 3, 3, 2, 0, 1, false, Kind::None}, seed++);
  checkConv({1, 6, 112, 112, 6, 3, 3, 6, 2, 1, 1, true, Kind::Sigmoid, false, 2}, seed++);
  checkConv({1, 3, 31, 33, 3, 5, 5, 3, 2, 2, 1, true, Kind::Relu, true}, seed++);
  checkConv({1, 4, 32, 32, 4, 5, 5, 4, 2, 2, 1, true, Kind::None, false, 1, {1, 2, 2, 1}}, seed++);
  checkConv({1, 3, 17, 19, 6, 3, 3, 3, 2, 1, 1, true, Kind::Clip, true}, seed++);  // multiplier 2
  checkConv({1, 2, 19, 40, 2, 5, 5, 2, 2, 0, 1, true, Kind::None, false, 1, {0, 1, 0, 0}}, seed++);
}

// Square 3x3 and 5x5 windows with stride 1 or 2 on one input channel per output channel take the
// AVX-512 kernel on 16 channels in lanes where the table has one, unless the maps are wide enough
// for the kernels in place: channel counts with a partial last block of 16, output rows of 1-17
// columns (every chunk width 1-8 and the split into equal chunks), chunks reaching past both ends
// of the row, stride 2 with 7 outputs, bands of rows on larger maps, no padding, one-sided
// padding, output rows all padding, batch 2, the residual before Relu / Clip or before an
// activation, Swish and Sigmoid on the lanes, two and three threads.
TEST(CpuKernels, ConvDepthwiseLanes) {
  uint32_t seed = 120;
  checkConv({1, 19, 7, 7, 19, 5, 5, 19, 1, 2, 1, true, Kind::None}, seed++);
  checkConv({1, 40, 14, 14, 40, 5, 5, 40, 1, 2, 1, true, Kind::Swish, false, 2}, seed++);
  checkConv({1, 33, 14, 14, 33, 5, 5, 33, 2, 2, 1, true, Kind::Relu}, seed++);   // 7 outputs, stride 2
  checkConv({2, 17, 13, 13, 17, 3, 3, 17, 2, 1, 1, false, Kind::Clip}, seed++);  // 7 outputs, stride 2
  checkConv({1, 16, 7, 7, 16, 3, 3, 16, 1, 1, 1, true, Kind::Relu}, seed++);
  checkConv({1, 20, 13, 13, 20, 3, 3, 20, 1, 1, 1, true, Kind::Sigmoid, false, 3}, seed++);
  for (int64_t w : {1, 2, 3, 4, 5, 6, 8, 9, 11, 13, 17})
    checkConv({1, 18, 5, w, 18, 5, 5, 18, 1, 2, 1, true, Kind::None}, seed++);
  checkConv({1, 24, 60, 70, 24, 5, 5, 24, 1, 2, 1, true, Kind::Clip, false, 2}, seed++);  // bands
  checkConv({1, 16, 61, 29, 16, 5, 5, 16, 1, 2, 1, false, Kind::Swish, true, 2}, seed++);  // bands, residual
  checkConv({1, 21, 9, 11, 21, 3, 3, 21, 1, 0, 1, true, Kind::None}, seed++);  // no padding: a smaller output
  checkConv({1, 21, 9, 11, 21, 5, 5, 21, 1, 0, 1, true, Kind::Relu, true}, seed++);
  checkConv({1, 9, 10, 9, 9, 5, 5, 9, 1, 2, 1, true, Kind::None, false, 1, {2, 0, 1, 2}}, seed++);
  checkConv({1, 9, 3, 2, 9, 5, 5, 9, 1, 2, 1, true, Kind::Clip, true}, seed++);  // map smaller than the window
  checkConv({1, 5, 1, 1, 5, 3, 3, 5, 2, 4, 1, true, Kind::None}, seed++);  // rows of padding only
  checkConv({2, 32, 7, 7, 32, 5, 5, 32, 1, 2, 1, true, Kind::Sigmoid, true, 2}, seed++);
}

// Every CPU Conv path with the residual Z added before the activation.
TEST(CpuKernels, ConvResidualPointwise) {
  uint32_t seed = 200;
  for (int64_t m : {1, 5, 7, 17})
    for (int64_t hw : {4, 5, 13})
      checkConv({1, 7, hw, hw, m, 1, 1, 1, 1, 0, 1, m % 2 == 1, Kind::Relu, true}, seed++);
  checkConv({2, 300, 7, 9, 13, 1, 1, 1, 1, 0, 1, true, Kind::Clip, true}, seed++);    // K > 256, batch 2
  checkConv({1, 48, 3, 5, 30, 1, 1, 1, 1, 0, 1, false, Kind::Sigmoid, true}, seed++);  // activation outside the kernel
}

TEST(CpuKernels, ConvResidualThinColumns) {
  uint32_t seed = 220;
  for (int64_t w : {1, 2, 3, 4}) {
    checkConv({1, 300, 1, w, 37, 1, 1, 1, 1, 0, 1, true, Kind::Relu, true}, seed++);
    checkConv({2, 48, 1, w, 13, 1, 1, 1, 1, 0, 1, false, Kind::None, true}, seed++);
  }
}

TEST(CpuKernels, ConvResidualIm2colAndStripes) {
  KernelSwitch off(&CpuKernelChoices::winograd, false);
  KernelSwitch tapsOff(&CpuKernelChoices::tapConv, false);
  uint32_t seed = 240;
  checkConv({1, 3, 7, 5, 7, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true}, seed++);
  checkConv({1, 5, 13, 11, 17, 3, 3, 1, 2, 1, 1, false, Kind::Clip, true}, seed++);  // strided, padded
  checkConv({1, 8, 13, 13, 16, 1, 1, 1, 2, 0, 1, true, Kind::None, true}, seed++);   // strided 1x1
  checkConv({1, 40, 9, 9, 23, 3, 3, 1, 1, 1, 1, true, Kind::HardSwish, true}, seed++);
  checkConv({1, 600, 19, 23, 11, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true}, seed++);  // stripes
  checkConv({2, 300, 41, 37, 9, 3, 3, 1, 2, 1, 1, false, Kind::Relu, true}, seed++);  // stripes, strided, batch 2
  checkConv({1, 300, 33, 33, 6, 3, 3, 3, 1, 1, 2, true, Kind::None, true}, seed++);   // stripes, grouped, dilated
  checkConv({1, 12, 13, 13, 18, 3, 3, 3, 1, 1, 1, true, Kind::Relu, true}, seed++);   // grouped
  checkConv({2, 8, 7, 7, 8, 1, 1, 4, 1, 0, 1, false, Kind::None, true}, seed++);      // grouped pointwise
}

TEST(CpuKernels, ConvResidualDepthwise) {
  uint32_t seed = 260;
  checkConv({1, 13, 13, 13, 13, 3, 3, 13, 1, 1, 1, true, Kind::Clip, true}, seed++);  // padded AVX2 3x3 s1
  checkConv({2, 7, 17, 15, 7, 3, 3, 7, 2, 1, 1, true, Kind::Relu, true}, seed++);     // padded AVX2 3x3 s2
  checkConv({1, 5, 12, 12, 5, 5, 5, 5, 2, 2, 1, false, Kind::Sigmoid, true}, seed++);  // 5x5 s2, activation after
  checkConv({1, 6, 7, 5, 6, 5, 5, 6, 1, 2, 1, true, Kind::Relu, true}, seed++);       // 5x5 s1, odd plane
  checkConv({1, 4, 9, 9, 8, 3, 3, 4, 1, 2, 2, true, Kind::None, true}, seed++);       // multiplier 2, dilated
  checkConv({1, 3, 1, 1, 3, 3, 3, 3, 1, 1, 1, true, Kind::Relu, true}, seed++);       // all padding
  checkConv({1, 4, 29, 41, 4, 3, 3, 4, 2, 1, 1, true, Kind::Relu, true}, seed++);
  checkConv({1, 2, 6, 25, 2, 3, 17, 2, 1, 1, 1, true, Kind::Relu, true}, seed++);     // wider than 16 taps
  checkConv({1, 2, 120, 130, 2, 3, 3, 2, 1, 1, 1, true, Kind::Relu, true}, seed++);   // several padded bands
  checkConv({1, 1, 115, 117, 1, 5, 5, 1, 2, 2, 1, false, Kind::Clip, true}, seed++);
  checkConv({1, 2, 301, 37, 2, 3, 3, 2, 2, 1, 1, true, Kind::Relu, true}, seed++);    // bands, de-interleaved
  checkConv({1, 1, 4, 4200, 1, 3, 3, 1, 1, 1, 1, true, Kind::Relu, true}, seed++);    // too wide: border path
  checkConv({1, 2, 40, 33, 2, 3, 3, 2, 3, 1, 1, true, Kind::Relu, true}, seed++);     // stride 3
}

TEST(CpuKernels, DepthwiseResidualBothTables) {
  // The plane kernels of both function tables directly, with and without the fused clamp.
  for (const auto& [k, stride, h, w] : std::vector<std::array<int64_t, 4>>{{3, 1, 7, 13}, {3, 2, 13, 11}, {5, 1, 9, 7},
                                                                          {5, 2, 15, 17}, {7, 1, 9, 9},
                                                                          {3, 2, 263, 37}, {5, 1, 500, 19},
                                                                          {3, 1, 3, 4101}}) {
    DepthwiseArgs p;
    p.inH = h, p.inW = w, p.kernelH = k, p.kernelW = k, p.strideH = stride, p.strideW = stride;
    p.padH = p.padW = k / 2;
    p.outH = (h + 2 * p.padH - k) / stride + 1, p.outW = (w + 2 * p.padW - k) / stride + 1;
    Tensor x = randomTensor(DataType::Float32, {h, w}, 1), wt = randomTensor(DataType::Float32, {k, k}, 2);
    Tensor z = randomTensor(DataType::Float32, {p.outH, p.outW}, 3, -2, 2);
    for (bool clamp : {false, true}) {
      p.reluMin = clamp, p.clipLo = 0.f, p.clipHi = 0.5f;
      std::vector<double> expected(p.outH * p.outW);
      for (int64_t oh = 0; oh < p.outH; ++oh)
        for (int64_t ow = 0; ow < p.outW; ++ow) {
          double s = 0.25;
          for (int64_t kh = 0; kh < k; ++kh)
            for (int64_t kw = 0; kw < k; ++kw) {
              const int64_t ih = oh * stride - p.padH + kh, iw = ow * stride - p.padW + kw;
              if (ih >= 0 && ih < h && iw >= 0 && iw < w)
                s += double(x.data<float>()[ih * w + iw]) * wt.data<float>()[kh * k + kw];
            }
          s += z.data<float>()[oh * p.outW + ow];
          expected[oh * p.outW + ow] = clamp ? std::min(0.5, std::max(0.0, s)) : s;
        }
      for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
        p.residual = z.data<float>();
        std::vector<float> y(p.outH * p.outW, -7.f);
        fn->depthwisePlane(p, x.data<float>(), wt.data<float>(), 0.25f, y.data());
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], expected[i], 1e-4)
              << fn->isa << " k=" << k << " stride=" << stride << " clamp=" << clamp << " i=" << i;
      }
    }
  }
}

void checkGemm(int64_t M, int64_t N, int64_t K, bool transA, bool transB, const Shape& cShape, float alpha, float beta,
               Kind act, uint32_t seed) {
  Node node;
  node.type = OpType::Gemm;
  node.setInt("transA", transA);
  node.setInt("transB", transB);
  node.setFloat("alpha", alpha);
  node.setFloat("beta", beta);
  if (act != Kind::None) setActivation(node, act, 0.2f);
  std::vector<OpInput> inputs{in(randomTensor(DataType::Float32, transA ? Shape{K, M} : Shape{M, K}, seed)),
                              constant(randomTensor(DataType::Float32, transB ? Shape{N, K} : Shape{K, N}, seed + 1))};
  inputs.push_back(in(randomTensor(DataType::Float32, cShape, seed + 2)));
  SCOPED_TRACE(::testing::Message() << "gemm M=" << M << " N=" << N << " K=" << K << " transA=" << transA
                                    << " transB=" << transB << " C=" << shapeToString(cShape));
  checkAgainstReference(node, inputs);
}

TEST(CpuKernels, Gemm) {
  uint32_t seed = 80;
  for (int64_t M : {1, 6, 7, 13})
    for (int64_t N : {1, 15, 16, 17, 127})
      checkGemm(M, N, 13, false, true, {N}, 1.f, 1.f, Kind::None, seed++);
  checkGemm(13, 33, 300, true, false, {13, 33}, 0.5f, 2.f, Kind::Relu, seed++);
  checkGemm(7, 19, 257, true, true, {7, 1}, 1.f, 0.25f, Kind::LeakyRelu, seed++);
  checkGemm(5, 9, 3, false, false, {}, 1.5f, 1.f, Kind::None, seed++);  // scalar C
}

TEST(CpuKernels, GemmThinRows) {
  // 1 to 4 rows of A run one GEMV per packed weight panel; 5 and more the blocked micro-kernel.
  uint32_t seed = 100;
  for (int64_t M : {1, 2, 3, 4, 5})
    for (int64_t N : {7, 33, 1000}) checkGemm(M, N, 129, false, true, {N}, 1.f, 1.f, Kind::Relu, seed++);
  checkGemm(3, 41, 300, true, false, {3, 41}, 0.5f, 2.f, Kind::Sigmoid, seed++);  // transposed A: strided rows
  checkGemm(1, 70, 1280, false, true, {1, 1}, 1.f, 0.5f, Kind::None, seed++);     // classifier-like, scalar C
}

TEST(CpuKernels, MatMulConstantB) {
  uint32_t seed = 120;
  for (const Shape& a : {Shape{13, 127}, Shape{2, 7, 33}, Shape{1, 3, 5, 260}, Shape{1, 1, 75}, Shape{2, 97}}) {
    Node node;
    node.type = OpType::MatMul;
    const int64_t K = a.back();
    for (int64_t N : {1, 17, 64}) {
      SCOPED_TRACE(::testing::Message() << "matmul A=" << shapeToString(a) << " N=" << N);
      checkAgainstReference(node, {in(randomTensor(DataType::Float32, a, seed)),
                                   constant(randomTensor(DataType::Float32, {K, N}, seed + 1))});
      seed += 2;
    }
  }
  Node fused;
  fused.type = OpType::MatMul;
  setActivation(fused, Kind::Gelu, 0.f);
  checkAgainstReference(fused, {in(randomTensor(DataType::Float32, {9, 31}, 7)),
                                constant(randomTensor(DataType::Float32, {31, 18}, 8))});
}

TEST(CpuKernels, MatMulActivationB) {
  // Both operands activations (attention scores): batch broadcast either way.
  uint32_t seed = 140;
  const std::vector<std::pair<Shape, Shape>> cases{{{13, 7}, {7, 17}},
                                                   {{3, 13, 64}, {3, 64, 13}},
                                                   {{2, 3, 7, 19}, {1, 3, 19, 33}},
                                                   {{1, 6, 5}, {4, 5, 16}},
                                                   {{2, 1, 7, 300}, {3, 300, 5}}};
  for (const auto& [a, b] : cases) {
    Node node;
    node.type = OpType::MatMul;
    SCOPED_TRACE(::testing::Message() << "matmul A=" << shapeToString(a) << " B=" << shapeToString(b));
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, a, seed)), in(randomTensor(DataType::Float32, b, seed + 1))});
    seed += 2;
  }
}

void checkMatMulBias(const Shape& a, const Shape& b, bool constantB, Kind act, uint32_t seed) {
  Node node;
  node.type = OpType::MatMul;
  if (act == Kind::Clip) setActivation(node, act, -0.5f, 0.5f);
  else if (act != Kind::None) setActivation(node, act, 0.1f);
  Tensor bt = randomTensor(DataType::Float32, b, seed + 1);
  SCOPED_TRACE(::testing::Message() << "matmul+bias A=" << shapeToString(a) << " B=" << shapeToString(b)
                                    << " constantB=" << constantB);
  checkAgainstReference(node, {in(randomTensor(DataType::Float32, a, seed)), constantB ? constant(bt) : in(bt),
                               constant(randomTensor(DataType::Float32, {b.back()}, seed + 2, -2, 2))});
}

TEST(CpuKernels, MatMulBias) {
  // Packed constant B (thin GEMV rows for M <= 4, blocked otherwise) and activation B.
  uint32_t seed = 300;
  for (int64_t M : {1, 3, 17})
    for (int64_t N : {5, 33})
      for (int64_t K : {7, 129}) {
        checkMatMulBias({M, K}, {K, N}, true, M == 3 ? Kind::Relu : Kind::None, seed++);
        checkMatMulBias({M, K}, {K, N}, false, M == 17 ? Kind::Clip : Kind::None, seed++);
      }
  checkMatMulBias({2, 3, 7, 300}, {300, 33}, true, Kind::Gelu, seed++);   // batches folded into rows, K > 256
  checkMatMulBias({3, 13, 64}, {3, 64, 13}, false, Kind::Relu, seed++);   // batched
  checkMatMulBias({2, 1, 7, 19}, {3, 19, 5}, false, Kind::None, seed++);  // batch broadcast
  checkMatMulBias({1, 6, 5}, {4, 5, 16}, false, Kind::None, seed++);
}

void checkPool(OpType type, const Shape& x, int64_t k, int64_t stride, int64_t pad, bool ceil, bool includePad,
               int64_t dilation, uint32_t seed) {
  Node node;
  node.type = type;
  node.setInts("kernel_shape", {k, k});
  node.setInts("strides", {stride, stride});
  node.setInts("pads", {pad, pad, pad, pad});
  if (dilation != 1) node.setInts("dilations", {dilation, dilation});
  node.setInt("ceil_mode", ceil);
  if (type == OpType::AveragePool) node.setInt("count_include_pad", includePad);
  SCOPED_TRACE(::testing::Message() << opTypeName(type) << " x=" << shapeToString(x) << " k=" << k << " stride="
                                    << stride << " pad=" << pad << " ceil=" << ceil << " includePad=" << includePad);
  checkAgainstReference(node, {in(randomTensor(DataType::Float32, x, seed))});
}

TEST(CpuKernels, Pools) {
  uint32_t seed = 160;
  for (OpType type : {OpType::MaxPool, OpType::AveragePool})
    for (bool ceil : {false, true})
      for (bool includePad : {false, true}) {
        checkPool(type, {1, 5, 13, 13}, 3, 2, 1, ceil, includePad, 1, seed++);
        checkPool(type, {2, 3, 14, 11}, 3, 2, 0, ceil, includePad, 1, seed++);
        checkPool(type, {1, 4, 7, 7}, 2, 1, 1, ceil, includePad, 1, seed++);
        checkPool(type, {1, 2, 17, 17}, 5, 3, 2, ceil, includePad, 1, seed++);
      }
  checkPool(OpType::MaxPool, {1, 3, 13, 13}, 3, 1, 2, false, false, 2, seed++);  // dilated
  // Rows wide enough for the vectorised 3x3 stride-2 interior, with NaN and ties as in the reference.
  for (bool ceil : {false, true})
    for (int64_t pad : {0, 1})
      for (int64_t width : {41, 75, 112}) checkPool(OpType::MaxPool, {1, 3, 20, width + pad}, 3, 2, pad, ceil, false, 1, seed++);
  Node node;
  node.type = OpType::MaxPool;
  node.setInts("kernel_shape", {3, 3});
  node.setInts("strides", {2, 2});
  Tensor x = randomTensor(DataType::Float32, {1, 1, 5, 77}, seed++);  // 16- and 8-wide steps and the rest
  // Every 5th value: 77 % 5 != 0, so the NaN columns differ from row to row (a NaN first tap of
  // the first row, and of the later rows, both occur).
  for (int64_t i = 0; i < x.elements(); i += 5) x.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 3; i < x.elements(); i += 11) x.data<float>()[i] = 0.5f;
  std::vector<Tensor> outputs;
  ASSERT_TRUE(runOp(node, {in(x)}, 1, &outputs));
  Tensor expected = reference(node, {in(x)});
  for (int64_t i = 0; i < expected.elements(); ++i) {
    const float e = expected.data<float>()[i], a = outputs[0].data<float>()[i];
    EXPECT_TRUE(std::isnan(e) ? std::isnan(a) : a == e) << "at " << i << ": " << a << " vs " << e;
  }
}

TEST(CpuKernels, GlobalAveragePool) {
  // Plane sizes below, at and past the 32 partial sums, 2-D and 3-D spatial, batch 2.
  uint32_t seed = 190;
  for (const Shape& s : {Shape{1, 5, 1, 1}, Shape{2, 3, 4, 8}, Shape{1, 7, 13, 13}, Shape{1, 2, 112, 112},
                         Shape{1, 3, 5, 6, 7}, Shape{1, 4, 33}, Shape{1, 1152, 7, 7}, Shape{1, 9, 8, 8}}) {
    Node node;
    node.type = OpType::GlobalAveragePool;
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, s, seed++, -3.0, 5.0))});
  }
}

TEST(CpuKernels, ReduceOverOneBlockOfAxes) {
  // [outer, n, inner] with inner 1 (partial sums), inner past a chunk of 256 columns and its
  // tail, size-1 dims inside the reduced block, negative axes, every axis, keepdims 0, a NaN.
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;  // empty: every axis
    int64_t keepdims;
  };
  const std::vector<Case> cases = {{{1, 1024, 7, 7}, {2, 3}, 0},   {{2, 5, 3, 4}, {1}, 1},
                                   {{3, 7, 1, 300}, {1, 2}, 1},    {{13, 517}, {0}, 0},
                                   {{2, 1, 9, 1, 5}, {-2, -3}, 1}, {{4, 6, 33}, {}, 1},
                                   {{1, 3, 77, 111}, {-1}, 1}};
  uint32_t seed = 230;
  for (OpType type : {OpType::ReduceSum, OpType::ReduceMean, OpType::ReduceMax, OpType::ReduceMin}) {
    for (const Case& c : cases) {
      for (int threads : {1, 2}) {
        Node node;
        node.type = type;
        node.setInt("keepdims", c.keepdims);
        Tensor x = randomTensor(DataType::Float32, c.shape, seed++, -3.0, 5.0);
        if (c.shape[0] == 4) x.data<float>()[17] = std::numeric_limits<float>::quiet_NaN();
        std::vector<OpInput> inputs = {in(x)};
        if (!c.axes.empty())
          inputs.push_back(constant(makeTensor<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes)));
        SCOPED_TRACE(::testing::Message() << opTypeName(type) << " " << shapeToString(c.shape) << " threads "
                                          << threads);
        checkAgainstReference(node, inputs, threads);
      }
    }
  }
}

TEST(CpuKernels, SigmoidErfSoftmax) {
  uint32_t seed = 200;
  for (int64_t n : {1, 7, 13, 127, 40000}) {  // vector tails, and enough to spread over the pool
    for (OpType type : {OpType::Sigmoid, OpType::Erf}) {
      Node node;
      node.type = type;
      const double range = type == OpType::Sigmoid ? 100.0 : 5.0;
      SCOPED_TRACE(::testing::Message() << opTypeName(type) << " n=" << n);
      checkAgainstReference(node, {in(randomTensor(DataType::Float32, {n}, seed++, -range, range))});
    }
  }
  for (const Shape& shape : {Shape{13}, Shape{3, 127}, Shape{2, 5, 1000}}) {
    Node node;
    node.type = OpType::Softmax;
    SCOPED_TRACE(::testing::Message() << "softmax " << shapeToString(shape));
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, shape, seed++, -20.0, 20.0))});
    node.setInt("axis", 0);  // not the last axis: the reference kernel runs
    checkAgainstReference(node, {in(randomTensor(DataType::Float32, shape, seed++, -20.0, 20.0))});
  }
}

TEST(CpuKernels, UnaryTablesAgree) {
  // The selected table (AVX2 polynomials when present) against the scalar libm one.
  Tensor x = randomTensor(DataType::Float32, {1031}, 9, -30.0, 30.0);
  const float* xv = x.data<float>();
  std::vector<float> fast(1031), slow(1031);
  for (auto member : {&CpuFunctions::sigmoid, &CpuFunctions::erf, &CpuFunctions::exp, &CpuFunctions::swish,
                      &CpuFunctions::gelu}) {
    (cpuFunctions().*member)(xv, fast.data(), 1031);
    (scalarCpuFunctions().*member)(xv, slow.data(), 1031);
    for (int i = 0; i < 1031; ++i)
      EXPECT_NEAR(fast[i], slow[i], 1e-6 + 1e-5 * std::fabs(slow[i])) << cpuFunctions().isa << " x=" << xv[i];
  }
  // Sigmoid, Swish and GELU at the ends of the float range and on NaN, in the vector body and the tail.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special{-inf, -1e30f, -104.f, -88.f, -87.f, -20.f, -0.f, 0.f, 1e-30f,
                                   20.f, 88.f, 1e30f, inf, nan, -inf, inf, nan};
  const int64_t n = static_cast<int64_t>(special.size());
  for (auto member : {&CpuFunctions::sigmoid, &CpuFunctions::swish, &CpuFunctions::gelu}) {
    std::vector<float> f(n), g(n);
    (cpuFunctions().*member)(special.data(), f.data(), n);
    (scalarCpuFunctions().*member)(special.data(), g.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      if (std::isnan(g[i]) || std::isinf(g[i])) {
        EXPECT_TRUE(std::isnan(g[i]) ? std::isnan(f[i]) : f[i] == g[i]) << " x=" << special[i] << " got " << f[i];
      } else {
        EXPECT_NEAR(f[i], g[i], 1e-6 + 1e-5 * std::fabs(g[i])) << " x=" << special[i];
      }
    }
  }
}

TEST(CpuKernels, GeluDenseAgainstDouble) {
  // Every 1/2048 over [-8, 8] (the vector tables' fits live in [-5.5, 5.5]) against x * Phi(x)
  // in double, with the bound UnaryTablesAgree uses against the scalar table.
  const int64_t n = 16 * 2048 + 1;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -8.f + static_cast<float>(i) / 2048.f;
  for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
    fn->gelu(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i], expected = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      ASSERT_NEAR(y[i], expected, 1e-6 + 1e-5 * std::fabs(expected)) << fn->isa << " x=" << x[i];
    }
  }
}

TEST(CpuKernels, SoftmaxRowTablesAgree) {
  // Both tables against softmax(scale * x) in double: lengths around the vector width (body,
  // pairs of vectors, masked tail), a negative scale (the largest scale * x is then at the
  // smallest x) and a row where most values underflow to 0; in place and not.
  uint32_t seed = 300;
  for (int64_t n : {1, 5, 8, 9, 16, 17, 23, 197})
    for (float scale : {1.f, 0.125f, -0.7f, 40.f}) {
      Tensor x = randomTensor(DataType::Float32, {n}, seed++, -20.0, 20.0);
      const float* xv = x.data<float>();
      double maxValue = -1e300, sum = 0;
      for (int64_t i = 0; i < n; ++i) maxValue = std::max(maxValue, double(scale) * xv[i]);
      std::vector<double> expected(n);
      for (int64_t i = 0; i < n; ++i) sum += expected[i] = std::exp(double(scale) * xv[i] - maxValue);
      for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()})
        for (bool inPlace : {false, true}) {
          std::vector<float> y(xv, xv + n);
          fn->softmaxRow(inPlace ? y.data() : xv, y.data(), n, scale);
          for (int64_t i = 0; i < n; ++i) {
            // Beyond the exp polynomial's 2e-6: the float rounding of scale * x (and of the
            // maximum), one unit in the last place of the exponent's argument.
            const double argument = std::fabs(double(scale) * xv[i]) + std::fabs(maxValue);
            const double p = expected[i] / sum;
            ASSERT_NEAR(y[i], p, 1e-7 + (2e-6 + 1.2e-7 * argument) * p)
                << fn->isa << " n=" << n << " scale=" << scale << " i=" << i << (inPlace ? " in place" : "");
          }
        }
    }
}

// The Winograd transforms of the selected table and the scalar one against the definition
// B^T d B and A^T m A computed here, on rows of 5, 13, 16 and 37 tiles (vector bodies and tails),
// the output stage with and without bias, residual and clamp bounds;
// nothing is written past the last tile.
TEST(CpuKernels, WinogradTransformTablesAgree) {
  const double BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  const double AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  constexpr float kUntouched = -12345.f;
  uint32_t seed = 31;
  for (int64_t tiles : {5, 13, 16, 37}) {
    const int64_t width = 2 * tiles + 2, stride = tiles + 5;
    Tensor rowsT = randomTensor(DataType::Float32, {4, width}, seed++);
    const float* r = rowsT.data<float>();
    const float* rows[4] = {r, r + width, r + 2 * width, r + 3 * width};
    Tensor mT = randomTensor(DataType::Float32, {16 * stride}, seed++);
    Tensor zT = randomTensor(DataType::Float32, {2, 2 * tiles}, seed++);
    for (bool staged : {false, true}) {
      WinogradOutputStage stage;
      if (staged) stage.bias = 0.3f, stage.z0 = zT.data<float>(), stage.z1 = stage.z0 + 2 * tiles, stage.lo = -0.5f, stage.hi = 1.5f;
      for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
        std::vector<float> v(16 * stride, kUntouched), y0(2 * tiles + 16, kUntouched), y1(2 * tiles + 16, kUntouched);
        fn->winogradInput2x3(rows, tiles, v.data(), stride);
        fn->winogradOutput2x3(mT.data<float>(), stride, tiles, y0.data(), y1.data(), stage);
        const std::string where = std::string(fn->isa) + " tiles " + std::to_string(tiles) + (staged ? " staged" : "");
        for (int64_t t = 0; t < stride; ++t)
          for (int p = 0; p < 16; ++p) {
            if (t >= tiles) {
              EXPECT_EQ(v[p * stride + t], kUntouched) << where << " wrote V past the tiles";
              continue;
            }
            double want = 0;
            for (int i = 0; i < 4; ++i)
              for (int k = 0; k < 4; ++k) want += BT[p / 4][i] * rows[i][2 * t + k] * BT[p % 4][k];
            EXPECT_NEAR(v[p * stride + t], want, 1e-5) << where << " tile " << t << " p " << p;
          }
        for (int64_t t = 0; t < tiles; ++t)
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) {
              double want = 0;
              for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b) want += AT[i][a] * mT.data<float>()[(4 * a + b) * stride + t] * AT[j][b];
              if (staged) want = std::min(1.5, std::max(-0.5, want + 0.3 + zT.data<float>()[i * 2 * tiles + 2 * t + j]));
              EXPECT_NEAR((i == 0 ? y0 : y1)[2 * t + j], want, 1e-5) << where << " tile " << t;
            }
        for (int64_t k = 2 * tiles; k < 2 * tiles + 16; ++k)
          EXPECT_TRUE(y0[k] == kUntouched && y1[k] == kUntouched) << where << " wrote past the row";
      }
    }
  }
}

// Runs packedGemm with both function tables and every operand form (A and B packed or not)
// into C (row stride ldc) and checks C against `expected` (M x N) within 1e-4 relative.
void expectPackedGemmAllForms(ThreadPool* pool, const Tensor& a, const Tensor& b, int64_t M, int64_t N, int64_t K,
                              int64_t ldc, const GemmEpilogue& ep, const std::vector<double>& expected,
                              const std::string& what) {
  for (const CpuFunctions* fn : {&cpuFunctions(), &scalarCpuFunctions()}) {
    std::vector<float> packedA(packedASize(*fn, M, K)), packedB(packedBSize(*fn, K, N));
    packGemmA(*fn, a.data<float>(), K, 1, M, K, packedA.data());
    packGemmB(*fn, b.data<float>(), N, 1, K, N, packedB.data());
    for (bool packA : {false, true})
      for (bool packB : {false, true}) {
        GemmA ga;
        ga.data = packA ? packedA.data() : a.data<float>();
        ga.packed = packA;
        ga.rowStride = K;
        GemmB gb;
        gb.data = packB ? packedB.data() : b.data<float>();
        gb.packed = packB;
        gb.rowStride = N;
        std::vector<float> c(M * ldc, -7.f);
        packedGemm(pool, *fn, M, N, K, ga, gb, c.data(), ldc, ep);
        double worst = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            worst = std::max(worst, std::fabs(c[i * ldc + j] - expected[i * N + j]) / (1.0 + std::fabs(expected[i * N + j])));
        EXPECT_LT(worst, 1e-4) << fn->isa << " M=" << M << " N=" << N << " K=" << K << " packA=" << packA
                               << " packB=" << packB << what;
      }
  }
}

// Relu (or Sigmoid) of alpha * A B + bias[row] + residual, in double.
std::vector<double> gemmExpectation(const Tensor& a, const Tensor& b, const Tensor& bias, const float* residual,
                                    int64_t ldr, int64_t M, int64_t N, int64_t K, float alpha, bool sigmoid = false) {
  std::vector<double> expected(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(a.data<float>()[i * K + k]) * b.data<float>()[k * N + j];
      s = alpha * s + bias.data<float>()[i] + (residual ? residual[i * ldr + j] : 0.f);
      expected[i * N + j] = sigmoid ? 1.0 / (1.0 + std::exp(-s)) : s > 0 ? s : 0;
    }
  return expected;
}

TEST(CpuKernels, PackedGemmThreadsAndScalarTable) {
  // The driver directly: both function tables, pools of 2 and 3 threads, every operand form,
  // thin products (few rows of A or few columns of B) that take the GEMV paths, products whose
  // threads' shares are runs of column panels or of row panels with a partial last panel
  // (169 x 1000: columns, several blocks per share; 49 x 160: rows, as the columns deal out
  // unevenly; 1000 x 13: rows), fewer panels than threads, last row blocks of every partial size,
  // and K in several blocks of unequal length (770: 272 + 272 + 226) under more rows than one block.
  const int64_t shapes[][3] = {{29, 45, 270}, {3, 45, 270}, {29, 3, 270}, {1, 1, 19}, {4, 70, 33}, {50, 2, 33},
                               {96, 196, 40}, {301, 49, 300}, {77, 600, 9}, {1000, 13, 20}, {169, 1000, 24},
                               {49, 160, 50}, {5, 9, 10},
                               // A last row block of every size 1..7 (the tail kernels on unpacked A)
                               {9, 40, 37}, {11, 70, 20}, {12, 33, 65}, {14, 96, 300}, {15, 31, 8},
                               {301, 70, 770}};
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    uint32_t seed = 3;
    for (const auto& shape : shapes) {
      const int64_t M = shape[0], N = shape[1], K = shape[2];
      Tensor a = randomTensor(DataType::Float32, {M, K}, seed++), b = randomTensor(DataType::Float32, {K, N}, seed++);
      Tensor bias = randomTensor(DataType::Float32, {M}, seed++);
      GemmEpilogue ep;
      ep.bias = bias.data<float>();
      ep.biasRowStride = 1;
      ep.act.kind = Kind::Relu;
      expectPackedGemmAllForms(&pool, a, b, M, N, K, N, ep, gemmExpectation(a, b, bias, nullptr, 0, M, N, K, 1.f),
                               " threads=" + std::to_string(threads));
    }
  }
}

TEST(CpuKernels, PackedGemmResidualBothTables) {
  // The residual through every packedGemm path (blocked, thin rows, thin columns), both tables,
  // into a C with a row stride wider than N: added by the micro-kernel with alpha 1 (whole and
  // partial blocks; Relu clamped there too, Sigmoid applied over the finished block), or in the
  // epilogue (alpha 0.5).
  ThreadPool pool(3);
  const int64_t shapes[][3] = {{29, 45, 270}, {3, 45, 270}, {29, 3, 270}, {1, 1, 19},
                               {7, 17, 0},    {15, 40, 300}, {48, 96, 40}, {21, 40, 800}};
  uint32_t seed = 50;
  for (const auto& shape : shapes) {
    const int64_t M = shape[0], N = shape[1], K = shape[2], ldc = N + 3;
    Tensor a = randomTensor(DataType::Float32, {M, K}, seed++), b = randomTensor(DataType::Float32, {K, N}, seed++);
    Tensor bias = randomTensor(DataType::Float32, {M}, seed++);
    Tensor z = randomTensor(DataType::Float32, {M, ldc}, seed++, -2, 2);
    for (bool sigmoid : {false, true})
      for (float alpha : {1.f, 0.5f}) {
        GemmEpilogue ep;
        ep.alpha = alpha;
        ep.bias = bias.data<float>();
        ep.biasRowStride = 1;
        ep.residual = z.data<float>();
        ep.residualRowStride = ldc;
        ep.act.kind = sigmoid ? Kind::Sigmoid : Kind::Relu;
        expectPackedGemmAllForms(&pool, a, b, M, N, K, ldc, ep,
                                 gemmExpectation(a, b, bias, z.data<float>(), ldc, M, N, K, alpha, sigmoid),
                                 " alpha=" + std::to_string(alpha) + (sigmoid ? " sigmoid" : " relu"));
      }
  }
}

TEST(CpuKernels, PackedGemmStridedRowBias) {
  // A row bias read with a stride (staged per row block, not read in place) over several row
  // blocks of one block of C: each row block must keep its own staged bias.
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{29, 45, 40}, {50, 70, 16}, {72, 33, 300}};
  uint32_t seed = 80;
  for (const auto& shape : shapes) {
    const int64_t M = shape[0], N = shape[1], K = shape[2];
    Tensor a = randomTensor(DataType::Float32, {M, K}, seed++), b = randomTensor(DataType::Float32, {K, N}, seed++);
    Tensor strided = randomTensor(DataType::Float32, {2 * M}, seed++), bias(DataType::Float32, {M});
    for (int64_t i = 0; i < M; ++i) bias.data<float>()[i] = strided.data<float>()[2 * i];
    GemmEpilogue ep;
    ep.bias = strided.data<float>();
    ep.biasRowStride = 2;
    ep.act.kind = Kind::Relu;
    expectPackedGemmAllForms(&pool, a, b, M, N, K, N, ep, gemmExpectation(a, b, bias, nullptr, 0, M, N, K, 1.f), "");
  }
}

}  // namespace
}  // namespace osprey::test
