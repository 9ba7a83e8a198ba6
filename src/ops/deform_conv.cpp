// DeformConv (ONNX opset 19; torchvision's deform_conv2d): a 2-D convolution whose kernel taps read
// the input at learned fractional offsets, bilinearly interpolated (points outside the map read 0),
// each tap's sample optionally scaled by a mask. Channels share offsets by offset group.
#include <cmath>
#include <vector>

#include "core/dtype.h"
#include "ops/op_def.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

struct DeformSetup {
  int64_t n = 0, c = 0, h = 0, w = 0, oc = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t group = 1, offsetGroup = 1;
  int64_t strideH = 1, strideW = 1, dilH = 1, dilW = 1, padTop = 0, padLeft = 0;
};

Status setup(const Node& node, const TensorViews& in, DeformSetup* s) {
  const TensorView &x = in[0], &wt = in[1], &offset = in[2];
  if (x.rank() != 4 || wt.rank() != 4 || offset.rank() != 4)
    return Status::unsupported("X, W and offset must be 4-D (2-D DeformConv); got " + shapeToString(x.shape) + ", " +
                               shapeToString(wt.shape) + ", " + shapeToString(offset.shape));
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].present && in[i].dtype != x.dtype) return Status::invalidModel(dtypeError(in[i], "every input (X's dtype)"));
  s->n = x.shape[0], s->c = x.shape[1], s->h = x.shape[2], s->w = x.shape[3];
  s->oc = wt.shape[0], s->kh = wt.shape[2], s->kw = wt.shape[3];
  const auto kernel = node.getInts("kernel_shape", {s->kh, s->kw});
  if (kernel.size() != 2 || kernel[0] != s->kh || kernel[1] != s->kw)
    return Status::invalidModel("kernel_shape " + shapeToString(kernel) + " does not match W " + shapeToString(wt.shape));
  s->group = node.getInt("group", 1);
  s->offsetGroup = node.getInt("offset_group", 1);
  if (s->group < 1 || s->offsetGroup < 1 || s->c % s->group || s->oc % s->group || s->c % s->offsetGroup)
    return Status::invalidModel("group " + std::to_string(s->group) + " and offset_group " + std::to_string(s->offsetGroup) +
                                " must divide the channels (X " + std::to_string(s->c) + ", W " + std::to_string(s->oc) + ")");
  if (wt.shape[1] * s->group != s->c)
    return Status::invalidModel("W " + shapeToString(wt.shape) + " does not take " + std::to_string(s->c / s->group) +
                                " channels per group");
  const auto strides = node.getInts("strides", {1, 1}), dil = node.getInts("dilations", {1, 1});
  const auto pads = node.getInts("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4)
    return Status::invalidModel("strides, dilations (2 values) and pads (4) describe two spatial axes");
  for (int64_t v : strides)
    if (v < 1 || v > (1 << 20)) return Status::invalidModel("strides must be in [1, 2^20]");
  for (int64_t v : dil)
    if (v < 1 || v > (1 << 20)) return Status::invalidModel("dilations must be in [1, 2^20]");
  for (int64_t v : pads)
    if (v < 0 || v > (1 << 20)) return Status::invalidModel("pads must be in [0, 2^20]");
  s->strideH = strides[0], s->strideW = strides[1], s->dilH = dil[0], s->dilW = dil[1];
  s->padTop = pads[0], s->padLeft = pads[1];
  s->oh = (s->h + pads[0] + pads[2] - (s->dilH * (s->kh - 1) + 1)) / s->strideH + 1;
  s->ow = (s->w + pads[1] + pads[3] - (s->dilW * (s->kw - 1) + 1)) / s->strideW + 1;
  if (s->oh < 1 || s->ow < 1) return Status::invalidModel("the output would be empty for X " + shapeToString(x.shape));
  const int64_t taps = s->kh * s->kw;
  if (offset.shape != Shape{s->n, s->offsetGroup * 2 * taps, s->oh, s->ow})
    return Status::invalidModel("offset " + shapeToString(offset.shape) + " must be " +
                                shapeToString({s->n, s->offsetGroup * 2 * taps, s->oh, s->ow}));
  if (in.size() > 3 && in[3].present && in[3].shape != Shape{s->oc})
    return Status::invalidModel("B " + shapeToString(in[3].shape) + " must be [" + std::to_string(s->oc) + "]");
  if (in.size() > 4 && in[4].present && in[4].shape != Shape{s->n, s->offsetGroup * taps, s->oh, s->ow})
    return Status::invalidModel("mask " + shapeToString(in[4].shape) + " must be " +
                                shapeToString({s->n, s->offsetGroup * taps, s->oh, s->ow}));
  return Status::ok();
}

Status deformShape(const Node& node, const TensorViews& in, TensorViews& out) {
  DeformSetup s;
  OSPREY_RETURN_IF_ERROR(setup(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = {s.n, s.oc, s.oh, s.ow};
  return Status::ok();
}

// The value of plane x (h x w) at (y, xpos), bilinearly: corners outside the plane read 0, and a
// point at or beyond one pixel outside reads 0.
double bilinear(const std::vector<double>& plane, int64_t h, int64_t w, double y, double xpos) {
  if (y <= -1 || y >= h || xpos <= -1 || xpos >= w) return 0.0;
  const int64_t y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(xpos));
  const double ly = y - y0, lx = xpos - x0;
  auto at = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < h && xx >= 0 && xx < w ? plane[yy * w + xx] : 0.0; };
  return (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) + ly * (1 - lx) * at(y0 + 1, x0) +
         ly * lx * at(y0 + 1, x0 + 1);
}

// Samples one channel's taps at every output position, then adds them, weighted, into the
// outputs of its group; in double, as the oracle the kernels are held to. Memory: one channel's
// samples and one image's outputs.
Status deformKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  DeformSetup s;
  OSPREY_RETURN_IF_ERROR(setup(node, in, &s));
  const int64_t taps = s.kh * s.kw, positions = s.oh * s.ow, cg = s.c / s.group, ocg = s.oc / s.group;
  const int64_t channelsPerOffset = s.c / s.offsetGroup;
  auto at = [](const TensorView& v, int64_t i) { return loadAsDouble(v.dtype, v.data, i); };
  const bool hasBias = in.size() > 3 && in[3].present, hasMask = in.size() > 4 && in[4].present;
  std::vector<double> plane(static_cast<size_t>(s.h * s.w)), samples(static_cast<size_t>(taps * positions));
  std::vector<double> acc(static_cast<size_t>(s.oc * positions));
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t o = 0; o < s.oc; ++o)
      std::fill(acc.begin() + o * positions, acc.begin() + (o + 1) * positions, hasBias ? at(in[3], o) : 0.0);
    for (int64_t c = 0; c < s.c; ++c) {
      const int64_t g = c / channelsPerOffset;
      for (int64_t k = 0; k < s.h * s.w; ++k) plane[k] = at(in[0], (n * s.c + c) * s.h * s.w + k);
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t i = t / s.kw, j = t % s.kw;
        const int64_t dyAt = ((n * s.offsetGroup + g) * 2 * taps + 2 * t) * positions, dxAt = dyAt + positions;
        const int64_t maskAt = ((n * s.offsetGroup + g) * taps + t) * positions;
        for (int64_t p = 0; p < positions; ++p) {
          const int64_t oy = p / s.ow, ox = p % s.ow;
          const double y = static_cast<double>(oy * s.strideH - s.padTop + i * s.dilH) + at(in[2], dyAt + p);
          const double xpos = static_cast<double>(ox * s.strideW - s.padLeft + j * s.dilW) + at(in[2], dxAt + p);
          samples[t * positions + p] = bilinear(plane, s.h, s.w, y, xpos) * (hasMask ? at(in[4], maskAt + p) : 1.0);
        }
      }
      const int64_t group = c / cg, cin = c % cg;
      for (int64_t o = group * ocg; o < (group + 1) * ocg; ++o)
        for (int64_t t = 0; t < taps; ++t) {
          const double weight = at(in[1], (o * cg + cin) * taps + t);
          for (int64_t p = 0; p < positions; ++p) acc[o * positions + p] += weight * samples[t * positions + p];
        }
    }
    for (int64_t k = 0; k < s.oc * positions; ++k) storeFromDouble(out[0].dtype, out[0].data, n * s.oc * positions + k, acc[k]);
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_DeformConv = {OpType::DeformConv, "DeformConv", 3, 5, 1, 1, deformShape, deformKernel, nullptr, 0, false};

}  // namespace osprey
