// Resize of 4-D tensors over H and W: nearest (every nearest_mode) and linear, with the
// coordinate transformations except tf_crop_and_resize; no antialias or exclude_outside.
// Tap positions are computed on the host in double, as the reference kernel does.
#include <algorithm>
#include <cmath>

#include "backends/opencl/cl_execution.h"

namespace osprey::opencl {

namespace {

struct AxisPlan {
  int64_t inLen = 0, outLen = 0;
  double scale = 1.0, lengthResized = 0.0;
};

struct ResizeMode {
  bool linear = false;
  std::string coord, rounding;
};

// Input coordinate sampled by output coordinate x (ONNX Resize coordinate transformations).
double sourceCoordinate(const std::string& coord, const AxisPlan& ax, int64_t x) {
  const double xr = static_cast<double>(x), in = static_cast<double>(ax.inLen);
  if (coord == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(ax.outLen) / ax.lengthResized;
    return in / 2 * (1 - adjustment) + (xr + 0.5) / ax.scale - 0.5;
  }
  if (coord == "pytorch_half_pixel") return ax.lengthResized == 1.0 ? -0.5 : (xr + 0.5) / ax.scale - 0.5;
  if (coord == "align_corners") return ax.lengthResized == 1.0 ? 0.0 : xr * (in - 1) / (ax.lengthResized - 1);
  if (coord == "asymmetric") return xr / ax.scale;
  return (xr + 0.5) / ax.scale - 0.5;  // half_pixel
}

// Two taps and the weight of the second per output coordinate of one axis.
void axisTaps(const ResizeMode& m, const AxisPlan& ax, std::vector<cl_int>* taps, std::vector<float>* weights) {
  const int64_t last = ax.inLen - 1;
  for (int64_t x = 0; x < ax.outLen; ++x) {
    const double c = sourceCoordinate(m.coord, ax, x), fl = std::floor(c), frac = c - fl;
    if (!m.linear) {
      bool up = false;
      if (frac > 0) {
        if (m.rounding == "round_prefer_ceil")
          up = frac >= 0.5;
        else if (m.rounding == "floor")
          up = false;
        else if (m.rounding == "ceil")
          up = true;
        else
          up = frac > 0.5;  // round_prefer_floor
      }
      const cl_int i = static_cast<cl_int>(std::clamp<int64_t>(static_cast<int64_t>(fl) + (up ? 1 : 0), 0, last));
      taps->insert(taps->end(), {i, i});
      weights->push_back(0.f);
      continue;
    }
    const int64_t i0 = static_cast<int64_t>(fl);
    taps->push_back(static_cast<cl_int>(std::clamp<int64_t>(i0, 0, last)));
    taps->push_back(static_cast<cl_int>(std::clamp<int64_t>(i0 + 1, 0, last)));
    weights->push_back(static_cast<float>(frac));
  }
}

class ResizeExecution : public CLExecution {
 public:
  ResizeExecution(OpenCLBackend* b, ResizeMode mode, AxisPlan h, AxisPlan w)
      : CLExecution(b), mode_(std::move(mode)), h_(h), w_(w) {}
  ~ResizeExecution() override {
    if (taps_) clReleaseMemObject(taps_);
    if (weights_) clReleaseMemObject(weights_);
  }
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    std::vector<cl_int> taps;
    std::vector<float> weights;
    axisTaps(mode_, h_, &taps, &weights);
    axisTaps(mode_, w_, &taps, &weights);
    cl_context ctx = cl()->runtime()->context();
    cl_int err = CL_SUCCESS;
    if (taps_) clReleaseMemObject(taps_);
    if (weights_) clReleaseMemObject(weights_);
    taps_ =
        clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, taps.size() * sizeof(cl_int), taps.data(), &err);
    OSPREY_RETURN_IF_ERROR(clCheck(err, "Resize tap table"));
    weights_ = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, weights.size() * sizeof(float),
                              weights.data(), &err);
    OSPREY_RETURN_IF_ERROR(clCheck(err, "Resize weight table"));
    return kernel_.create(cl(), "resize", "resize2d", {in[0], out[0]});
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const Shape& x = in[0]->shape;
    cl_int4 sizes;
    sizes.s[0] = static_cast<cl_int>(h_.inLen);
    sizes.s[1] = static_cast<cl_int>(w_.inLen);
    sizes.s[2] = static_cast<cl_int>(h_.outLen);
    sizes.s[3] = static_cast<cl_int>(w_.outLen);
    const int64_t planes = x[0] * x[1];
    kernel_.begin().mem(ref(in[0])).mem(ref(out[0])).arg(taps_).arg(weights_).arg(sizes).arg(cl_int(planes));
    return kernel_.launch(cl(), w_.outLen, h_.outLen, planes);
  }

 private:
  ResizeMode mode_;
  AxisPlan h_, w_;
  cl_mem taps_ = nullptr, weights_ = nullptr;
  Kernel kernel_;
};

}  // namespace

std::unique_ptr<Execution> createResize(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.node || in.empty() || !in[0] || out.size() != 1 || !out[0]) return nullptr;
  if (in[0]->dtype != DataType::Float32 || out[0]->dtype != DataType::Float32) return nullptr;
  const Node& n = *op.node;
  const Shape& x = in[0]->shape;
  const Shape& y = out[0]->shape;
  if (x.size() != 4 || y.size() != 4 || y[0] != x[0] || y[1] != x[1] || x[2] == 0 || x[3] == 0) return nullptr;
  ResizeMode m;
  const std::string mode = n.getString("mode", "nearest");
  if (mode != "nearest" && mode != "linear") return nullptr;
  m.linear = mode == "linear";
  m.coord = n.getString("coordinate_transformation_mode", "half_pixel");
  m.rounding = n.getString("nearest_mode", "round_prefer_floor");
  if (m.coord == "tf_crop_and_resize" || n.getInt("antialias", 0) != 0 || n.getInt("exclude_outside", 0) != 0 ||
      n.getString("keep_aspect_ratio_policy", "stretch") != "stretch" || n.hasAttr("axes"))
    return nullptr;
  AxisPlan h{x[2], y[2]}, w{x[3], y[3]};
  auto given = [&](size_t i) { return in.size() > i && in[i] && in[i]->elements() > 0; };
  if (given(2)) {
    if (!in[2]->constData || in[2]->dtype != DataType::Float32 || in[2]->elements() != 4) return nullptr;
    const float* s = reinterpret_cast<const float*>(in[2]->constData);
    if (s[0] != 1.f || s[1] != 1.f) return nullptr;
    h.scale = s[2];
    w.scale = s[3];
  } else {
    h.scale = static_cast<double>(y[2]) / static_cast<double>(x[2]);
    w.scale = static_cast<double>(y[3]) / static_cast<double>(x[3]);
  }
  h.lengthResized = h.scale * static_cast<double>(h.inLen);
  w.lengthResized = w.scale * static_cast<double>(w.inLen);
  return std::make_unique<ResizeExecution>(b, m, h, w);
}

}  // namespace osprey::opencl
