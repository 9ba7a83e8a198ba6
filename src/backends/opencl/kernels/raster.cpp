// Raster: the strided region copies geometry lowers data movement to (Reshape, Flatten,
// Transpose, Concat, Slice, Split, Pad, Tile, ...), on plain row-major device buffers.
#include "backends/opencl/cl_execution.h"

namespace osprey::opencl {

namespace {

cl_int4 viewOf(const RasterView& v) {
  cl_int4 r;
  for (int i = 0; i < 3; ++i) r.s[i] = static_cast<cl_int>(v.stride[i]);
  r.s[3] = static_cast<cl_int>(v.offset);
  return r;
}

class RasterExecution : public CLExecution {
 public:
  RasterExecution(OpenCLBackend* b, std::shared_ptr<const RasterPlan> plan) : CLExecution(b), plan_(std::move(plan)) {}
  Status onResize(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    // One copy kernel per input: inputs may differ in storage (an image, or a buffer when too large).
    copies_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      copies_.push_back(std::make_unique<Kernel>());
      if (in[i]) OSPREY_RETURN_IF_ERROR(copies_.back()->create(cl(), "raster", "raster_region", {in[i], out[0]}));
    }
    return plan_->fill ? fill_.create(cl(), "raster", "fill", {out[0]}) : Status::ok();
  }
  Status onExecute(const std::vector<RuntimeTensor*>& in, const std::vector<RuntimeTensor*>& out) override {
    const DeviceRef dst = ref(out[0]);
    if (plan_->fill) {
      const int64_t n = out[0]->elements();
      fill_.begin().mem(dst).arg(cl_int(n)).arg(static_cast<float>(plan_->fillValue));
      OSPREY_RETURN_IF_ERROR(fill_.launch(cl(), n));
    }
    for (const RasterRegion& r : plan_->regions) {
      cl_int4 size;
      for (int i = 0; i < 3; ++i) size.s[i] = static_cast<cl_int>(r.size[i]);
      size.s[3] = 0;
      Kernel& copy = *copies_[r.input];
      copy.begin().mem(ref(in[r.input])).mem(dst).arg(viewOf(r.src)).arg(viewOf(r.dst)).arg(size);
      OSPREY_RETURN_IF_ERROR(copy.launch(cl(), r.size[2], r.size[1], r.size[0]));
    }
    return Status::ok();
  }

 private:
  std::shared_ptr<const RasterPlan> plan_;
  std::vector<std::unique_ptr<Kernel>> copies_;
  Kernel fill_;
};

}  // namespace

std::unique_ptr<Execution> createRaster(OpenCLBackend* b, const OpRef& op, const std::vector<RuntimeTensor*>& in,
                                        const std::vector<RuntimeTensor*>& out) {
  if (!op.raster || out.size() != 1 || !out[0] || out[0]->dtype != DataType::Float32) return nullptr;
  for (const RasterRegion& r : op.raster->regions) {
    if (r.input < 0 || r.input >= static_cast<int>(in.size()) || !in[r.input]) return nullptr;
    if (in[r.input]->dtype != DataType::Float32) return nullptr;
    if (r.count() <= 0) continue;
  }
  return std::make_unique<RasterExecution>(b, op.raster);
}

}  // namespace osprey::opencl
