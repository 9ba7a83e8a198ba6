// Graph passes run by the converter, in order: remove Identity/Dropout, fuse QDQ patterns into
// integer ops, fold constants, fold BatchNormalization into Conv, fuse activations, drop dead
// code and unused tensors.
#pragma once
#include <vector>

#include "core/graph.h"

namespace osprey::passes {

// Each pass returns how many ops it removed or rewrote.
int removeIdentities(Graph& g);
Status foldConstants(Graph& g, int* folded);
// Computes `node`'s outputs on the host and makes them constants when every input is a constant
// (or, with `shapesOnly`, for Shape/Size, when every input's shape is static); false leaves the
// graph as it was. The caller removes the node.
bool foldNode(Graph& g, const Node& node, bool shapesOnly);
// When every graph input has a static shape: records the static shape and dtype of every tensor
// that has one in its TensorInfo (runtime values and subgraphs stop the inference) and replaces
// Shape/Size of static shapes by constants. Run foldConstants after it.
int foldShapes(Graph& g);
// DequantizeLinear -> op -> QuantizeLinear (ONNX Runtime's QDQ format) into the integer ops:
// QLinearConv, QLinearMatMul, MatMulIntegerToFloat, QGemm, the com.microsoft QLinear ops, and
// data movement on the bytes (fuse_qdq.cpp, docs/quantization.md). Run before foldConstants,
// which would turn DequantizeLinear(weights) into float weights.
int fuseQuantizedOps(Graph& g);
// DQ(a) -> MatMul(., DQ(b)) [-> Q] of two activations (attention's products) into QLinearMatMul
// or MatMulIntegerToFloat, where both shapes are known, static, of one rank and the same batch
// dimensions (the CPU's integer MatMul does not broadcast). Run after foldShapes.
int fuseQuantizedActivationProducts(Graph& g);
// DequantizeLinear -> elementwise float ops -> QuantizeLinear, per tensor, into ByteLookup with
// the chain's 256 results (fuse_qdq_table.cpp). Run after foldConstants, which makes the chain's
// quantized scalars (DequantizeLinear of a constant) float constants.
int fuseQuantizedTables(Graph& g);
int foldBatchNormIntoConv(Graph& g);
// BatchNormalization on the 2-D output of a MatMul / Gemm with constant weights into a Gemm.
int foldBatchNormIntoGemm(Graph& g);
int fuseActivations(Graph& g);
// x * Sigmoid(x) (SiLU) into Swish with alpha 1, one pass over the data instead of two.
int fuseSwish(Graph& g);
// x * Tanh(Softplus(x)) into Mish, x * HardSigmoid(x) (alpha 1/6, beta 1/2) into HardSwish.
int fuseActivationPatterns(Graph& g);
// LayerNorm decomposition (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul, Add)
// into LayerNormalization; x * 0.5 * (1 + erf(x / sqrt2)) in its exported orders into Gelu.
int fuseLayerNorm(Graph& g);
// `tolerance`: how far, relatively, the graph's sqrt(2) or 1/sqrt(2) may be from the true value;
// float16's rounding for a graph widened from float16 (widen_float16.h), whose constants carry it.
int fuseGelu(Graph& g, double tolerance = 1e-5);
// PyTorch MultiheadAttention's exported head split, scaled QK^T, Softmax, PV and head merge
// into the ONNX Attention op on 3-D (1, S, heads * D) views.
int fuseAttention(Graph& g);
// The batch-first Transposes around a fused Attention's sequence-first body (its projections,
// head split and merge, output projection) folded away: the body runs on [B, S, E] rows and the
// Attention batches over B. Run after fuseAttention and fuseMatMulBias.
int foldAttentionBatchTransposes(Graph& g);
// MatMul(A, W, bias) with float32 constant weights whose output only disjoint Slices of the last
// axis read: one MatMul per Slice with those columns of W and bias (no strided copies at run time).
int splitSlicedProjections(Graph& g);
// MatMul(A, W[K, N]) + bias ([N] or [1, ..., 1, N], float32 constants) into MatMul(A, W, bias).
int fuseMatMulBias(Graph& g);
// Add(Conv(x), Z) with Z computed before the Conv and of the Conv output's static shape into
// Conv(x, W, B, Z); run before fuseActivations so that an activation after the Add still fuses.
int fuseConvResidual(Graph& g);
int removeDeadCode(Graph& g);
void compactTensors(Graph& g);

// Number of ops reading each tensor (graph outputs count as one reader).
std::vector<int> readerCounts(const Graph& g);
// Index of the node producing each tensor, -1 for inputs and constants.
std::vector<int> producers(const Graph& g);

}  // namespace osprey::passes
