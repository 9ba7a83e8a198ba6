// Runs with inputs and outputs bound to the caller's memory (IoBinding): host tensors written in
// place, and device memory of the main backend read and written on the device.
#include <algorithm>
#include <cstring>
#include <set>

#include "core/layout.h"
#include "core/run_limits.h"
#include "runtime/session_impl.h"

namespace osprey {

namespace {

// A RuntimeTensor over a DeviceTensor's memory on `backend`, in the model's dtype (fullPrecision:
// a Low-precision backend converts on the copy), NCHW.
RuntimeTensor deviceView(const DeviceTensor& d, const std::string& name, Backend* backend) {
  RuntimeTensor t;
  t.name = name;
  t.dtype = d.dtype;
  t.shape = d.shape;
  t.layout = Layout::NCHW;
  t.fullPrecision = true;
  t.backend = backend;
  t.chunk = backend->onWrapDevice(d.data, d.bytes());
  return t;
}

// A RuntimeTensor over host memory.
RuntimeTensor hostView(const Tensor& h, const std::string& name, uint8_t** base) {
  RuntimeTensor t;
  t.name = name;
  t.dtype = h.dtype();
  t.shape = h.shape();
  *base = static_cast<uint8_t*>(const_cast<void*>(h.data()));
  t.chunk = std::make_shared<MemChunk>();
  t.chunk->base = base;
  t.chunk->size = h.bytes();
  return t;
}

}  // namespace

// Asked while planning, for the inputs of the run being planned (the kept plan's set may differ).
Backend* SessionImpl::homeOfInput(int tensor) const {
  return deviceInputs_.count(tensors_[tensor].name) ? main_.get() : inputHome();
}

Status SessionImpl::allocateDevice(DataType dtype, const Shape& shape, DeviceTensor* out) {
  DeviceTensor d;
  d.device = main_->type();
  d.dtype = dtype;
  d.shape = shape;
  if (dtype == DataType::String || dtype == DataType::Undefined) return Status::invalidArgument("no device tensors of this dtype");
  OSPREY_RETURN_IF_ERROR(checkTensorFits("a device tensor", dtype, shape));
  OSPREY_RETURN_IF_ERROR(main_->onAllocateDevice(std::max<size_t>(d.bytes(), 1), &d.data, &d.owner));
  *out = std::move(d);
  return Status::ok();
}

Status SessionImpl::copyToDevice(const Tensor& host, const DeviceTensor& device) {
  if (device.device != main_->type() || !device.data) return Status::invalidArgument("the device tensor is not of this session's backend");
  if (host.dtype() != device.dtype || logicalShape(host.shape(), host.layout()) != device.shape)
    return Status::invalidArgument("copyToDevice: the host tensor's dtype or shape differs from the device tensor's");
  Tensor nchw = host;
  if (host.layout() != Layout::NCHW) {
    nchw = Tensor(host.dtype(), device.shape);
    OSPREY_RETURN_IF_ERROR(convertLayout(host.data(), host.layout(), nchw.data(), Layout::NCHW, device.shape, dataTypeSize(host.dtype())));
  }
  uint8_t* hostBase = nullptr;
  RuntimeTensor src = hostView(nchw, "host tensor", &hostBase);
  RuntimeTensor dst = deviceView(device, "device tensor", main_.get());
  OSPREY_RETURN_IF_ERROR(main_->onCopyBuffer(&src, &dst));
  return main_->onWaitFinish();
}

Status SessionImpl::copyFromDevice(const DeviceTensor& device, Tensor* host) {
  if (device.device != main_->type() || !device.data) return Status::invalidArgument("the device tensor is not of this session's backend");
  *host = Tensor(device.dtype, device.shape);
  uint8_t* hostBase = nullptr;
  RuntimeTensor src = deviceView(device, "device tensor", main_.get());
  RuntimeTensor dst = hostView(*host, "host tensor", &hostBase);
  OSPREY_RETURN_IF_ERROR(main_->onCopyBuffer(&src, &dst));
  return main_->onWaitFinish();
}

Status SessionImpl::run(const IoBinding& io) {
  const RunDeadline deadline(schedule_.runTimeLimitMs);
  const RunMemoryLimit memoryLimit(memoryLimit_);
  const ScratchRelease scratch{this};
  const SubgraphSessions::Scope bodies(subgraphs_.get());
  const Graph& g = model_->graph;
  std::map<std::string, Shape> shapes;
  std::set<std::string> deviceInputs;
  auto inputInfo = [&](const std::string& name) -> const TensorInfo* {
    const int idx = g.findTensor(name);
    return isInput(idx) ? &g.tensors[idx] : nullptr;
  };
  for (auto& [name, t] : io.hostInputs) {
    const TensorInfo* info = inputInfo(name);
    if (!info) return Status::invalidArgument("'" + name + "' is not an input of the model");
    OSPREY_RETURN_IF_ERROR(checkInput(*info, t));
    if (isHostValue(t) || info->optional || info->dtype == DataType::Sequence)
      return Status::invalidArgument("input '" + name + "' is a sequence or an optional: give it to run(inputs), not an IoBinding");
    shapes[name] = logicalShape(t.shape(), t.layout());
  }
  for (auto& [name, d] : io.deviceInputs) {
    const TensorInfo* info = inputInfo(name);
    if (!info) return Status::invalidArgument("'" + name + "' is not an input of the model");
    if (io.hostInputs.count(name)) return Status::invalidArgument("input '" + name + "' is bound twice");
    if (d.device != main_->type() || main_->type() == ForwardType::CPU)
      return Status::invalidArgument("input '" + name + "' is bound to " + forwardTypeName(d.device) +
                                     " memory; this session runs on " + forwardTypeName(main_->type()));
    if (info->dtype != DataType::Undefined && d.dtype != info->dtype)
      return Status::invalidArgument("input '" + name + "' has dtype " + dataTypeName(d.dtype) + "; the model expects " +
                                     dataTypeName(info->dtype));
    if (!d.data && d.elements() > 0) return Status::invalidArgument("input '" + name + "' has no device memory");
    shapes[name] = d.shape;
    deviceInputs.insert(name);
  }
  for (int i : inputs_)
    if (!shapes.count(g.tensors[i].name)) return Status::invalidArgument("input '" + g.tensors[i].name + "' is not bound");
  for (auto& [name, t] : io.hostOutputs)
    if (std::find(outputs_.begin(), outputs_.end(), g.findTensor(name)) == outputs_.end())
      return Status::invalidArgument("'" + name + "' is not an output of the model");
  for (auto& [name, d] : io.deviceOutputs) {
    if (std::find(outputs_.begin(), outputs_.end(), g.findTensor(name)) == outputs_.end())
      return Status::invalidArgument("'" + name + "' is not an output of the model");
    if (d.device != main_->type() || main_->type() == ForwardType::CPU)
      return Status::invalidArgument("output '" + name + "' is bound to " + forwardTypeName(d.device) +
                                     " memory; this session runs on " + forwardTypeName(main_->type()));
  }
  if (deviceInputs != deviceInputs_) {
    deviceInputs_ = deviceInputs;
    planned_ = false;
  }
  for (auto& [name, t] : io.hostInputs) {
    if (g.tensors[g.findTensor(name)].dtype != DataType::Undefined) continue;
    DataType& known = givenDtypes_[name];
    if (known != t.dtype()) planned_ = false;
    known = t.dtype();
  }
  OSPREY_RETURN_IF_ERROR(resize(shapes));

  std::vector<Tensor> staged;  // outputs of a staged model, made by the host path
  std::vector<Tensor> targets;  // this run's memory for outputs planned into the caller's
  std::set<std::string> writtenInPlace;
  struct Unbind {
    std::vector<uint8_t*>& bases;
    ~Unbind() { std::fill(bases.begin(), bases.end(), nullptr); }
  } unbind{outputBases_};
  if (boundary_ >= 0) {
    // Data-dependent shapes: run through the host path, then fill the bound outputs.
    std::map<std::string, Tensor> inputs(io.hostInputs.begin(), io.hostInputs.end());
    for (auto& [name, d] : io.deviceInputs) OSPREY_RETURN_IF_ERROR(copyFromDevice(d, &inputs[name]));
    deviceInputs_.clear();
    OSPREY_RETURN_IF_ERROR(run(inputs, &staged));
  } else {
    for (auto& [name, t] : io.hostInputs) {
      RuntimeTensor& rt = tensors_[g.findTensor(name)];
      OSPREY_RETURN_IF_ERROR(
          convertLayout(t.data(), t.layout(), rt.host(), rt.layout, rt.shape, dataTypeSize(rt.dtype), copyPool()));
    }
    for (auto& [name, d] : io.deviceInputs) {
      RuntimeTensor src = deviceView(d, name, main_.get());
      OSPREY_RETURN_IF_ERROR(main_->onCopyBuffer(&src, &tensors_[g.findTensor(name)]));
    }
    // Outputs planned into the caller's memory go into the bound tensor where it fits (then
    // nothing is copied after the run), else into a tensor of this run's.
    targets = bindOutputs(&targets);
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const std::string& name = g.tensors[outputs_[k]].name;
      auto bound = io.hostOutputs.find(name);
      const RuntimeTensor& rt = tensors_[outputs_[k]];
      if (outputBound_[k] && bound != io.hostOutputs.end() && bound->second.dtype() == rt.dtype &&
          bound->second.shape() == rt.shape && bound->second.layout() == Layout::NCHW) {
        outputBases_[k] = static_cast<uint8_t*>(const_cast<void*>(bound->second.data()));
        writtenInPlace.insert(name);
      }
    }
    OSPREY_RETURN_IF_ERROR(executeCommands());
  }  auto valueOf = [&](const std::string& name) -> const RuntimeTensor* {
    return boundary_ >= 0 ? nullptr : &tensors_[g.findTensor(name)];
  };
  auto stagedOutput = [&](const std::string& name) -> const Tensor& {
    const int idx = g.findTensor(name);
    size_t k = 0;
    while (outputs_[k] != idx) ++k;
    return staged.at(k);
  };
  for (auto& [name, t] : io.hostOutputs) {
    Tensor out = t;
    if (const RuntimeTensor* rt = valueOf(name)) {
      if (rt->dtype != t.dtype() || rt->shape != logicalShape(t.shape(), t.layout()) || t.layout() != Layout::NCHW)
        return Status::invalidArgument("output '" + name + "' is bound to a tensor of " + dataTypeName(t.dtype()) + " " +
                                       shapeToString(t.shape()) + "; it is " + dataTypeName(rt->dtype) + " " + shapeToString(rt->shape));
      if (!writtenInPlace.count(name)) OSPREY_RETURN_IF_ERROR(readInto(*rt, &out));
    } else {
      const Tensor& v = stagedOutput(name);
      if (v.dtype() != t.dtype() || v.shape() != t.shape())
        return Status::invalidArgument("output '" + name + "' is bound to a tensor of another dtype or shape");
      std::memcpy(out.data(), v.data(), v.bytes());
    }
  }
  for (auto& [name, d] : io.deviceOutputs) {
    RuntimeTensor dst = deviceView(d, name, main_.get());
    if (const RuntimeTensor* rt = valueOf(name)) {
      if (rt->dtype != d.dtype || rt->shape != d.shape)
        return Status::invalidArgument("output '" + name + "' is bound to device memory of " + dataTypeName(d.dtype) + " " +
                                       shapeToString(d.shape) + "; it is " + dataTypeName(rt->dtype) + " " + shapeToString(rt->shape));
      OSPREY_RETURN_IF_ERROR(main_->onCopyBuffer(rt, &dst));  // on the device, or up from the host
    } else {
      OSPREY_RETURN_IF_ERROR(copyToDevice(stagedOutput(name), d));
    }
  }
  return main_->onWaitFinish();
}

}  // namespace osprey
