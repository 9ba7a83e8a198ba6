// The layer importers (caffe_layers_nn.cpp: compute layers; caffe_layers_shape.cpp: data
// movement and reductions; caffe_layers_detection.cpp: SSD's heads) and the helpers they share.
#pragma once
#include <string>
#include <vector>

#include "converter/caffe/caffe_import.h"

namespace osprey::caffe {

// The layer's `<name>` parameter message (e.g. "convolution_param"); an empty one when absent.
const TextMessage& paramOf(const Layer& layer, const char* name);
// The single bottom and top, or an error saying the layer takes one of each.
Status oneToOne(CaffeContext& ctx, const Layer& layer, int* x, int* y);
// A constant shaped to broadcast against a rank-`rank` tensor along `axis` (trailing 1s).
int broadcastConstant(CaffeContext& ctx, const std::string& hint, const Blob& blob, int axis, int rank);
// Axis `axis` of a rank-`rank` tensor, negative counting from the end; an error naming the layer.
Status normalizeAxis(const Layer& layer, int64_t axis, int rank, int* out);
// Dims [begin, end) of x's shape, as an int64 tensor.
int shapeSlice(CaffeContext& ctx, const std::string& name, int x, int64_t begin, int64_t end);

#define OSPREY_CAFFE_LAYERS(X)                                                                              \
  X(Convolution) X(Deconvolution) X(DepthwiseConvolution) X(InnerProduct) X(Pooling) X(ReLU) X(PReLU)       \
  X(Sigmoid) X(TanH) X(ELU) X(AbsVal) X(BNLL) X(Power) X(Exp) X(Log) X(Threshold) X(Clip) X(BatchNorm)      \
  X(Scale) X(Bias) X(Eltwise) X(Softmax) X(LRN) X(Normalize) X(Concat) X(Slice) X(Split) X(Flatten)         \
  X(Reshape) X(Permute) X(Dropout) X(Crop) X(Interp) X(Upsample) X(Tile) X(ArgMax) X(Reduction) X(Silence) \
  X(ShuffleChannel) X(PriorBox) X(DetectionOutput)
#define OSPREY_CAFFE_DECLARE(type) Status import##type(CaffeContext& ctx, const Layer& layer);
OSPREY_CAFFE_LAYERS(OSPREY_CAFFE_DECLARE)
#undef OSPREY_CAFFE_DECLARE

}  // namespace osprey::caffe
