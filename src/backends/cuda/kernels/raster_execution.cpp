// Raster on the device: every data-movement op that geometry lowers (Transpose, Slice, Concat,
// Pad, Tile, Expand, Gather with constant indices, ...) runs as batches of strided copies.
#include "backends/cuda/kernels/cuda_executions.h"
#include "backends/cuda/kernels/cuda_launch.h"
#include "core/dtype.h"

namespace osprey::cuda {

namespace {

class RasterExecution : public Execution {
 public:
  RasterExecution(CUDABackend* backend, std::shared_ptr<const RasterPlan> plan) : Execution(backend), plan_(std::move(plan)) {}

  Status onExecute(const std::vector<RuntimeTensor*>& inputs, const std::vector<RuntimeTensor*>& outputs) override {
    auto* cuda = static_cast<CUDABackend*>(backend());
    RuntimeTensor* out = outputs[0];
    const DataType storage = cuda->storageType(out);
    const int elementSize = static_cast<int>(dataTypeSize(storage));
    void* dst = cuda->devicePtr(out);
    if (out->elements() == 0) return Status::ok();
    if (plan_->fill) {
      uint64_t pattern = 0;
      storeFromDouble(storage, &pattern, 0, plan_->fillValue);
      OSPREY_CUDA_RETURN_IF_ERROR(fillPattern(dst, out->elements(), elementSize, pattern, cuda->stream()), "Raster fill");
    }
    regions_.clear();
    for (const RasterRegion& r : plan_->regions) {
      if (r.count() == 0) continue;
      const RuntimeTensor* in = inputs[r.input];
      if (!in) return Status::internal("Raster region reads a missing input");
      const auto* src = static_cast<const uint8_t*>(cuda->devicePtr(in));
      // A whole-tensor contiguous copy is a memcpy.
      if (plan_->regions.size() == 1 && !plan_->fill && isContiguous(r) && r.count() == out->elements() &&
          r.src.offset == 0 && r.dst.offset == 0) {
        OSPREY_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, static_cast<size_t>(r.count()) * elementSize,
                                                    cudaMemcpyDeviceToDevice, cuda->stream()),
                                    "Raster copy");
        return Status::ok();
      }
      DeviceRasterRegion d{};
      d.src = src;
      d.srcOffset = r.src.offset;
      d.dstOffset = r.dst.offset;
      for (int k = 0; k < 3; ++k) {
        d.srcStride[k] = r.src.stride[k];
        d.dstStride[k] = r.dst.stride[k];
        d.size[k] = r.size[k];
      }
      regions_.push_back(d);
    }
    for (size_t first = 0; first < regions_.size(); first += kRasterRegionsPerLaunch) {
      int count = static_cast<int>(std::min<size_t>(kRasterRegionsPerLaunch, regions_.size() - first));
      OSPREY_CUDA_RETURN_IF_ERROR(rasterCopy(regions_.data() + first, count, dst, elementSize, cuda->stream()), "Raster");
    }
    return Status::ok();
  }

 private:
  static bool isContiguous(const RasterRegion& r) {
    const int64_t inner = r.size[2], plane = r.size[1] * r.size[2];
    return (r.size[2] == 1 || (r.src.stride[2] == 1 && r.dst.stride[2] == 1)) &&
           (r.size[1] == 1 || (r.src.stride[1] == inner && r.dst.stride[1] == inner)) &&
           (r.size[0] == 1 || (r.src.stride[0] == plane && r.dst.stride[0] == plane));
  }

  std::shared_ptr<const RasterPlan> plan_;
  std::vector<DeviceRasterRegion> regions_;
};

}  // namespace

std::unique_ptr<Execution> createRasterExecution(CUDABackend* backend, const OpRef& op, const std::vector<RuntimeTensor*>& inputs,
                                                 const std::vector<RuntimeTensor*>& outputs) {
  if (!op.raster || outputs.empty() || !outputs[0]) return nullptr;
  const size_t size = dataTypeSize(backend->storageType(outputs[0]));
  if (size != 1 && size != 2 && size != 4 && size != 8) return nullptr;
  // The lowered op's other inputs (Slice's starts, Reshape's shape) are not read: only the
  // inputs regions copy from must match the output.
  for (const RasterRegion& r : op.raster->regions) {
    if (r.input < 0 || static_cast<size_t>(r.input) >= inputs.size() || !inputs[r.input]) return nullptr;
    if (inputs[r.input]->dtype != outputs[0]->dtype) return nullptr;
  }
  return std::make_unique<RasterExecution>(backend, op.raster);
}

}  // namespace osprey::cuda
