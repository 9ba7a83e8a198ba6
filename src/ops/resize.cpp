// Resize-19: nearest, N-d linear and N-d cubic interpolation (separable: an output element is
// the sum over every axis's taps of the product of their weights), with every coordinate
// transformation mode, antialiasing filters, exclude_outside and keep_aspect_ratio_policy.
// Coordinates follow the ONNX reference implementation, which the node tests are made from:
// where the spec's length_resized is needed it is input_length * scale, not rounded.
#include <algorithm>
#include <cmath>

#include "ops/op_util.h"
#include "ops/resize.h"

namespace osprey {

namespace {

enum class Interp { Nearest, Linear, Cubic };
enum class Coord { HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners, Asymmetric, TfCropAndResize };
enum class Rounding { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class AspectPolicy { Stretch, NotLarger, NotSmaller };

struct ResizeAttrs {
  Interp interp = Interp::Nearest;
  Coord coord = Coord::HalfPixel;
  Rounding rounding = Rounding::RoundPreferFloor;
  AspectPolicy policy = AspectPolicy::Stretch;
  double cubicA = -0.75;
  bool excludeOutside = false, antialias = false;
  double extrapolation = 0.0;
  std::vector<int64_t> axes;  // normalized; every axis when the attribute is absent
};

// How one dimension is resized.
struct AxisResize {
  int64_t inLen = 0, outLen = 0;
  double scale = 1.0;           // output / input
  double lengthResized = 0.0;   // inLen * scale: not an integer when scales do not divide evenly
  double roiStart = 0.0, roiEnd = 1.0;
};

template <class E>
Status pickName(const Node& node, const char* attr, const char* fallback, std::initializer_list<std::pair<const char*, E>> names,
                E* out) {
  const std::string value = node.getString(attr, fallback);
  std::string known;
  for (auto& [name, e] : names) {
    if (value == name) {
      *out = e;
      return Status::ok();
    }
    known += std::string(known.empty() ? "" : ", ") + name;
  }
  return Status::invalidModel(std::string(attr) + " '" + value + "' is not one of " + known);
}

Status parseAttrs(const Node& node, int64_t rank, ResizeAttrs* a) {
  OSPREY_RETURN_IF_ERROR(pickName(node, "mode", "nearest",
                                  {{"nearest", Interp::Nearest}, {"linear", Interp::Linear}, {"cubic", Interp::Cubic}},
                                  &a->interp));
  OSPREY_RETURN_IF_ERROR(pickName(node, "coordinate_transformation_mode", "half_pixel",
                                  {{"half_pixel", Coord::HalfPixel},
                                   {"half_pixel_symmetric", Coord::HalfPixelSymmetric},
                                   {"pytorch_half_pixel", Coord::PytorchHalfPixel},
                                   {"align_corners", Coord::AlignCorners},
                                   {"asymmetric", Coord::Asymmetric},
                                   {"tf_crop_and_resize", Coord::TfCropAndResize}},
                                  &a->coord));
  OSPREY_RETURN_IF_ERROR(pickName(node, "nearest_mode", "round_prefer_floor",
                                  {{"round_prefer_floor", Rounding::RoundPreferFloor},
                                   {"round_prefer_ceil", Rounding::RoundPreferCeil},
                                   {"floor", Rounding::Floor},
                                   {"ceil", Rounding::Ceil}},
                                  &a->rounding));
  OSPREY_RETURN_IF_ERROR(pickName(node, "keep_aspect_ratio_policy", "stretch",
                                  {{"stretch", AspectPolicy::Stretch},
                                   {"not_larger", AspectPolicy::NotLarger},
                                   {"not_smaller", AspectPolicy::NotSmaller}},
                                  &a->policy));
  a->cubicA = node.getFloat("cubic_coeff_a", -0.75f);
  a->excludeOutside = node.getInt("exclude_outside", 0) != 0;
  a->extrapolation = node.getFloat("extrapolation_value", 0.f);
  const int64_t antialias = node.getInt("antialias", 0);
  if (antialias != 0 && antialias != 1) return Status::invalidModel("antialias must be 0 or 1, got " + std::to_string(antialias));
  a->antialias = antialias == 1;
  if (node.hasAttr("axes")) {
    OSPREY_RETURN_IF_ERROR(normalizeAxes(node.getInts("axes"), rank, &a->axes));
  } else {
    for (int64_t d = 0; d < rank; ++d) a->axes.push_back(d);
  }
  return Status::ok();
}

bool given(const TensorViews& inputs, size_t i) { return inputs.size() > i && inputs[i].present && inputs[i].elements() > 0; }

// Output lengths and scales per dimension, from scales (input 2) or sizes (input 3).
Status planAxes(const ResizeAttrs& a, const TensorViews& inputs, std::vector<AxisResize>* axes) {
  const Shape& in = inputs[0].shape;
  const size_t n = a.axes.size();
  axes->assign(in.size(), AxisResize());
  for (size_t d = 0; d < in.size(); ++d) {
    (*axes)[d].inLen = (*axes)[d].outLen = in[d];
    (*axes)[d].lengthResized = static_cast<double>(in[d]);
  }
  const bool hasScales = given(inputs, 2), hasSizes = given(inputs, 3);
  if (hasScales == hasSizes) return Status::invalidModel("exactly one of scales and sizes must be given");
  if (hasScales) {
    std::vector<float> scales;
    OSPREY_RETURN_IF_ERROR(inputs[2].readFloats(&scales, "scales"));
    if (scales.size() != n)
      return Status::invalidModel("scales has " + std::to_string(scales.size()) + " values for " + std::to_string(n) + " axes");
    for (size_t i = 0; i < n; ++i) {
      if (!(scales[i] > 0.f) || !std::isfinite(scales[i]))
        return Status::invalidModel("scale " + std::to_string(scales[i]) + " must be positive");
      AxisResize& ax = (*axes)[a.axes[i]];
      ax.scale = scales[i];
      ax.lengthResized = ax.scale * static_cast<double>(ax.inLen);
      if (ax.lengthResized > 9.0e15) return Status::invalidModel("scale " + std::to_string(scales[i]) + " is too large");
      ax.outLen = static_cast<int64_t>(std::floor(ax.lengthResized));
    }
    return Status::ok();
  }
  std::vector<int64_t> sizes;
  OSPREY_RETURN_IF_ERROR(inputs[3].readInts(&sizes, "sizes"));
  if (sizes.size() != n)
    return Status::invalidModel("sizes has " + std::to_string(sizes.size()) + " values for " + std::to_string(n) + " axes");
  for (size_t i = 0; i < n; ++i) {
    AxisResize& ax = (*axes)[a.axes[i]];
    if (sizes[i] < 0) return Status::invalidModel("sizes " + shapeToString(sizes) + " has a negative value");
    if (ax.inLen == 0 && sizes[i] > 0)
      return Status::invalidModel("cannot resize the empty axis " + std::to_string(a.axes[i]) + " of " + shapeToString(in));
    ax.outLen = sizes[i];
    ax.scale = ax.inLen == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(ax.inLen);
    ax.lengthResized = static_cast<double>(sizes[i]);
  }
  if (a.policy != AspectPolicy::Stretch && n > 0) {
    double s = (*axes)[a.axes[0]].scale;
    for (int64_t d : a.axes) s = a.policy == AspectPolicy::NotLarger ? std::min(s, (*axes)[d].scale) : std::max(s, (*axes)[d].scale);
    for (int64_t d : a.axes) {
      AxisResize& ax = (*axes)[d];
      ax.scale = s;
      ax.lengthResized = s * static_cast<double>(ax.inLen);
      if (ax.lengthResized > 9.0e15)  // as for scales: the cast below must stay within int64
        return Status::invalidModel("sizes " + shapeToString(sizes) + " with keep_aspect_ratio_policy stretch axis " +
                                    std::to_string(d) + " of " + shapeToString(in) + " beyond int64");
      ax.outLen = static_cast<int64_t>(ax.lengthResized + 0.5);  // round half up
    }
  }
  return Status::ok();
}

Status checkRoi(const ResizeAttrs& a, const TensorViews& inputs) {
  if (a.coord != Coord::TfCropAndResize) return Status::ok();
  if (!given(inputs, 1)) return Status::invalidModel("coordinate_transformation_mode tf_crop_and_resize needs roi");
  if (inputs[1].elements() != static_cast<int64_t>(2 * a.axes.size()))
    return Status::invalidModel("roi has " + std::to_string(inputs[1].elements()) + " values; it needs 2 per resized axis (" +
                                std::to_string(2 * a.axes.size()) + ")");
  return Status::ok();
}

Status resizeShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  const DataType dt = inputs[0].dtype;
  if (dt == DataType::Bool || dt == DataType::String || dataTypeSize(dt) == 0)
    return Status::unsupported(dtypeError(inputs[0], "X"));
  ResizeAttrs a;
  OSPREY_RETURN_IF_ERROR(parseAttrs(node, inputs[0].rank(), &a));
  OSPREY_RETURN_IF_ERROR(checkRoi(a, inputs));
  std::vector<AxisResize> axes;
  OSPREY_RETURN_IF_ERROR(planAxes(a, inputs, &axes));
  outputs[0].dtype = dt;
  outputs[0].shape.resize(axes.size());
  for (size_t d = 0; d < axes.size(); ++d) outputs[0].shape[d] = axes[d].outLen;
  return Status::ok();
}

// Where output coordinate x of an axis samples the input; false when tf_crop_and_resize
// samples outside the input (the output is then extrapolation_value).
bool originalCoordinate(Coord coord, const AxisResize& ax, int64_t x, double* out) {
  const double xr = static_cast<double>(x), in = static_cast<double>(ax.inLen);
  switch (coord) {
    case Coord::HalfPixel: *out = (xr + 0.5) / ax.scale - 0.5; return true;
    case Coord::HalfPixelSymmetric: {
      const double adjustment = static_cast<double>(ax.outLen) / ax.lengthResized;
      *out = in / 2 * (1 - adjustment) + (xr + 0.5) / ax.scale - 0.5;
      return true;
    }
    case Coord::PytorchHalfPixel: *out = ax.lengthResized == 1.0 ? -0.5 : (xr + 0.5) / ax.scale - 0.5; return true;
    case Coord::AlignCorners: *out = ax.lengthResized == 1.0 ? 0.0 : xr * (in - 1) / (ax.lengthResized - 1); return true;
    case Coord::Asymmetric: *out = xr / ax.scale; return true;
    case Coord::TfCropAndResize: {
      const double span = (ax.roiEnd - ax.roiStart) * (in - 1);
      *out = ax.roiStart * (in - 1) + (ax.lengthResized == 1.0 ? span / 2 : xr * span / (ax.lengthResized - 1));
      return *out >= 0 && *out <= in - 1;
    }
  }
  return true;
}

double cubicKernel(double t, double A) {
  t = std::fabs(t);
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0.0;
}

ResizeAxisTaps axisTaps(const ResizeAttrs& a, const AxisResize& ax) {
  ResizeAxisTaps t;
  t.first.push_back(0);
  const int64_t last = ax.inLen - 1;
  for (int64_t x = 0; x < ax.outLen; ++x) {
    double c = 0;
    t.outside.push_back(!originalCoordinate(a.coord, ax, x, &c));
    if (t.outside.back() || ax.inLen == 0) {
      t.first.push_back(t.taps.size());
      continue;
    }
    const double fl = std::floor(c), frac = c - fl;
    if (a.interp == Interp::Nearest) {
      bool up = false;
      if (frac > 0) {
        switch (a.rounding) {
          case Rounding::RoundPreferFloor: up = frac > 0.5; break;
          case Rounding::RoundPreferCeil: up = frac >= 0.5; break;
          case Rounding::Floor: up = false; break;
          case Rounding::Ceil: up = true; break;
        }
      }
      t.taps.push_back({std::clamp<int64_t>(static_cast<int64_t>(fl) + (up ? 1 : 0), 0, last), 1.0});
    } else {
      // The filter is stretched by 1/scale when antialiasing a downscale; taps are the
      // integer positions strictly inside its support around c.
      const double stretch = a.antialias ? std::min(ax.scale, 1.0) : 1.0;
      const double support = (a.interp == Interp::Linear ? 1.0 : 2.0) / stretch;
      const size_t begin = t.taps.size();
      double sum = 0;
      for (int64_t i = static_cast<int64_t>(std::floor(c - support)) + 1; i < c + support; ++i) {
        const double u = stretch * (static_cast<double>(i) - c);
        double w = a.interp == Interp::Linear ? std::max(0.0, 1 - std::fabs(u)) : cubicKernel(u, a.cubicA);
        if (a.excludeOutside && (i < 0 || i > last)) w = 0;
        sum += w;
        t.taps.push_back({std::clamp<int64_t>(i, 0, last), w});
      }
      const bool normalize = a.antialias || a.excludeOutside;
      size_t kept = begin;
      for (size_t k = begin; k < t.taps.size(); ++k) {
        if (t.taps[k].weight == 0) continue;  // a zero weight adds nothing (and would cost a load)
        t.taps[kept] = t.taps[k];
        if (normalize && sum != 0) t.taps[kept].weight /= sum;
        ++kept;
      }
      t.taps.resize(kept);
    }
    t.first.push_back(t.taps.size());
  }
  return t;
}

template <class T>
T fromDouble(double v, bool halfUp = false) {
  if constexpr (std::is_integral_v<T>) {
    return saturatingCast<T>(halfUp ? std::floor(v + 0.5) : v);
  } else {
    return static_cast<T>(static_cast<ComputeType<T>>(v));
  }
}

template <class T>
void resample(const TensorView& x, const std::vector<ResizeAxisTaps>& taps, double extrapolation, bool halfUp,
              TensorView& y) {
  const size_t rank = x.shape.size();
  const std::vector<int64_t> inStrides = [&] {
    std::vector<int64_t> s(rank, 1);
    for (int d = static_cast<int>(rank) - 2; d >= 0; --d) s[d] = s[d + 1] * x.shape[d + 1];
    return s;
  }();
  const T* src = x.as<const T>();
  T* dst = y.as<T>();
  const T outsideValue = fromDouble<T>(extrapolation);
  std::vector<int64_t> pos(rank, 0);  // output coordinate
  std::vector<size_t> k(rank);        // current tap per axis
  const int64_t total = y.elements();
  for (int64_t o = 0; o < total; ++o) {
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) outside = outside || taps[d].outside[pos[d]];
    if (outside) {
      dst[o] = outsideValue;
    } else {
      double acc = 0;
      for (size_t d = 0; d < rank; ++d) k[d] = taps[d].first[pos[d]];
      for (;;) {
        double w = 1;
        int64_t offset = 0;
        for (size_t d = 0; d < rank; ++d) {
          w *= taps[d].taps[k[d]].weight;
          offset += taps[d].taps[k[d]].index * inStrides[d];
        }
        acc += w * static_cast<double>(static_cast<ComputeType<T>>(src[offset]));
        int d = static_cast<int>(rank) - 1;
        for (; d >= 0; --d) {
          if (++k[d] < taps[d].first[pos[d] + 1]) break;
          k[d] = taps[d].first[pos[d]];
        }
        if (d < 0) break;
      }
      dst[o] = fromDouble<T>(acc, halfUp);
    }
    for (int d = static_cast<int>(rank) - 1; d >= 0 && ++pos[d] == y.shape[d]; --d) pos[d] = 0;
  }
}

Status planTaps(const Node& node, const TensorViews& inputs, std::vector<ResizeAxisTaps>* taps, double* extrapolation) {
  ResizeAttrs a;
  OSPREY_RETURN_IF_ERROR(parseAttrs(node, inputs[0].rank(), &a));
  OSPREY_RETURN_IF_ERROR(checkRoi(a, inputs));
  std::vector<AxisResize> axes;
  OSPREY_RETURN_IF_ERROR(planAxes(a, inputs, &axes));
  if (a.coord == Coord::TfCropAndResize) {
    std::vector<float> roi;
    OSPREY_RETURN_IF_ERROR(inputs[1].readFloats(&roi, "roi"));
    for (size_t i = 0; i < a.axes.size(); ++i) {
      axes[a.axes[i]].roiStart = roi[i];
      axes[a.axes[i]].roiEnd = roi[i + a.axes.size()];
    }
  }
  taps->clear();
  for (const AxisResize& ax : axes) taps->push_back(axisTaps(a, ax));
  *extrapolation = a.extrapolation;
  return Status::ok();
}

Status resizeReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool*) {
  std::vector<ResizeAxisTaps> taps;
  double extrapolation = 0;
  OSPREY_RETURN_IF_ERROR(resizeTaps(node, inputs, &taps, &extrapolation));
  bool ok = dispatchNumeric(inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) resample<T>(inputs[0], taps, extrapolation, resizeRoundsHalfUp(node), outputs[0]);
  });
  if (!ok) return Status::unsupported(dtypeError(inputs[0], "X"));
  return Status::ok();
}

}  // namespace

bool resizeRoundsHalfUp(const Node& node) { return node.getString("integer_rounding", "") == "half_up"; }

Status resizeTaps(const Node& node, const TensorViews& inputs, std::vector<ResizeAxisTaps>* taps,
                  double* extrapolation) {
  const std::string rounding = node.getString("integer_rounding", "");
  if (!rounding.empty() && rounding != "half_up")
    return Status::invalidModel(node.name + ": integer_rounding must be \"half_up\" or absent, not \"" + rounding + "\"");
  OSPREY_RETURN_IF_ERROR(planTaps(node, inputs, taps, extrapolation));
  // An empty Y never gets here (executeOnHost and the executions skip ops whose outputs are all
  // empty); an empty X has no value to sample for a non-empty one.
  if (inputs[0].elements() == 0)
    return Status::invalidArgument("X " + shapeToString(inputs[0].shape) + " is empty; there is nothing to resize");
  return Status::ok();
}

const OpDef kOpDef_Resize = {OpType::Resize, "Resize", 1, 4, 1, 1, resizeShape, resizeReference, nullptr,
                             (1u << 2) | (1u << 3), false};

}  // namespace osprey
