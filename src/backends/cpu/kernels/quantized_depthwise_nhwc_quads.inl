// The layout of the integer NHWC depthwise kernel (quantized_depthwise_nhwc.h, "quads"),
// included inside an unnamed namespace by the translation units that pack for it and run it, so
// that no copy compiled for one ISA stands in for another's.
//
// A quad is four bytes per channel that one vpdpbusd multiplies by four weights and adds into
// the channel's int32: for input column j of a row, (x[j], x[j + d], x[j + 2d], x[j + 3d]) with d
// the dilation, as uint8 (int8 bytes flipped by 0x80), zero-point bytes where the window reads
// padding. A kernel row of kW taps is ceil(kW / 4) quads, 4d columns apart; the weights of taps
// past kW are 0. Ring rows hold quads in blocks of 16 channels, [block][stored column][16][4],
// so that a block of positions reads fixed offsets from one pointer.
constexpr int64_t kQuadLanes = 16;
constexpr int64_t kQuadBytes = 4 * kQuadLanes;  // one stored column of one block

inline int64_t quadBlocks(int64_t channels) { return (channels + kQuadLanes - 1) / kQuadLanes; }
inline int64_t quadsPerKernelRow(int64_t kernelW) { return (kernelW + 3) / 4; }

// Packed weights: int8 quads [block][kernel row][quad][16][4], then int32 sums of the weights of
// kernel rows [0, kh) for kh = 1..kernelH, [kh - 1][blocks * 16], which turn the products of raw
// uint8 bytes into those of x - zx for any run of kernel rows (zero past the channels, like
// their weights).
inline int64_t quadWeightBlockBytes(int64_t kernelH, int64_t kernelW) {
  return kernelH * quadsPerKernelRow(kernelW) * kQuadBytes;
}
inline int64_t quadWeightSumsOffset(int64_t channels, int64_t kernelH, int64_t kernelW) {
  return quadBlocks(channels) * quadWeightBlockBytes(kernelH, kernelW);
}

struct QuadRing {
  int64_t quads = 1;         // per kernel row
  int64_t columnStep = 1;    // input columns between stored quads
  int64_t positionStep = 1;  // stored quads between neighbouring output positions
  int64_t quadStep = 4;      // stored quads between the quads of one kernel row
  int64_t columns = 0;       // stored quads per ring row and block, quad k at padded column k * columnStep
  int64_t rows = 1;          // input rows one output row can need, so slot ih % rows never collides
  // Bytes a stored quad takes from the input that the one before it in the row lacks: the quad
  // before, shifted right by 8 * newBytes bits, holds the rest. 4: every quad made whole.
  int64_t newBytes = 4;
};

// A stride that divides the quads' 4d column spacing lets the ring keep only the columns that
// windows start at (stride 2 stores half of them); others keep every column.
inline QuadRing quadRing(const QDepthwiseNhwcArgs& a) {
  QuadRing r;
  r.quads = quadsPerKernelRow(a.kernelW);
  const int64_t quadSpan = 4 * a.dilationW;
  r.columnStep = quadSpan % a.strideW == 0 ? a.strideW : 1;
  r.positionStep = a.strideW / r.columnStep;
  r.quadStep = quadSpan / r.columnStep;
  const int64_t lastColumn = (a.outW - 1) * a.strideW + (r.quads - 1) * quadSpan;
  r.columns = a.outW > 0 ? lastColumn / r.columnStep + 1 : 0;
  r.rows = std::max<int64_t>(1, std::min((a.kernelH - 1) * a.dilationH + 1, a.inH));
  if (r.columnStep % a.dilationW == 0 && r.columnStep / a.dilationW < 4) r.newBytes = r.columnStep / a.dilationW;
  return r;
}

// Scratch: the ring rows, the bias of the current output row's window rows (int32, blocks * 16),
// the input row each ring slot holds, and the ring row and weights of each window row.
struct QuadScratch {
  int64_t biasOffset = 0, heldOffset = 0, pointersOffset = 0, bytes = 0;
};

inline QuadScratch quadScratch(const QDepthwiseNhwcArgs& a) {
  const QuadRing r = quadRing(a);
  QuadScratch s;
  s.biasOffset = r.rows * quadBlocks(a.channels) * r.columns * kQuadBytes;
  s.heldOffset = s.biasOffset + quadBlocks(a.channels) * kQuadLanes * 4;
  s.pointersOffset = s.heldOffset + r.rows * 8;
  s.bytes = (s.pointersOffset + 2 * std::max<int64_t>(a.kernelH, 0) * 8 + 63) / 64 * 64;
  return s;
}
