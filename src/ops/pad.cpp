// Pad (Pad-21: pads, constant_value and axes are inputs; modes constant, reflect, edge, wrap).
// Each output coordinate along an axis reads one input coordinate (or the constant): that
// per-axis map drives both the reference kernel and the lowering, which cuts each axis into
// runs of constant source step and copies the product of the runs as boxes.
#include <cmath>
#include <cstring>
#include <limits>

#include "geometry/geometry.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

// Beyond this many boxes the lowering declines and the reference kernel runs instead.
constexpr int64_t kMaxBoxes = 4096;
// Lowering maps every output coordinate of an axis to its source; past this length the map
// alone would outweigh the kernel's work (and a huge pad would allocate gigabytes for it).
constexpr int64_t kMaxMappedAxis = int64_t{1} << 20;

struct PadPlan {
  PadMode mode = PadMode::Constant;
  std::vector<int64_t> begin, end;  // per input dimension; negative values crop
  Shape shape;                      // the output
};

Status parseMode(const Node& node, PadMode* mode) {
  const std::string m = node.getString("mode", "constant");
  if (m == "constant") *mode = PadMode::Constant;
  else if (m == "reflect") *mode = PadMode::Reflect;
  else if (m == "edge") *mode = PadMode::Edge;
  else if (m == "wrap") *mode = PadMode::Wrap;
  else return Status::invalidModel("unknown mode '" + m + "'; expected constant, reflect, edge or wrap");
  return Status::ok();
}

Status computePad(const Node& node, const TensorViews& inputs, PadPlan* plan) {
  OSPREY_RETURN_IF_ERROR(parseMode(node, &plan->mode));
  const Shape& in = inputs[0].shape;
  const int64_t rank = inputs[0].rank();
  std::vector<int64_t> pads, axes;
  if (inputs[1].rank() != 1) return Status::invalidModel("pads must be 1-D, got shape " + shapeToString(inputs[1].shape));
  OSPREY_RETURN_IF_ERROR(inputs[1].readInts(&pads, "pads"));
  if (inputs.size() > 3 && inputs[3].present) {
    std::vector<int64_t> raw;
    OSPREY_RETURN_IF_ERROR(inputs[3].readInts(&raw, "axes"));
    OSPREY_RETURN_IF_ERROR(normalizeAxes(raw, rank, &axes).withContext("input shape " + shapeToString(in)));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size())
    return Status::invalidModel("pads " + shapeToString(pads) + " must have 2 entries per padded axis (" +
                                std::to_string(2 * axes.size()) + ") for input shape " + shapeToString(in));
  plan->begin.assign(rank, 0);
  plan->end.assign(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    plan->begin[axes[i]] = pads[i];
    plan->end[axes[i]] = pads[i + axes.size()];
  }
  plan->shape = in;
  for (int64_t d = 0; d < rank; ++d) {
    // In 128 bits: pads of INT64_MIN and INT64_MAX may cancel out, or overflow alone.
    const __int128 length = static_cast<__int128>(in[d]) + plan->begin[d] + plan->end[d];
    if (length > std::numeric_limits<int64_t>::max())
      return Status::invalidModel("pads " + shapeToString(pads) + " take dimension " + std::to_string(d) +
                                  " of input shape " + shapeToString(in) + " beyond int64");
    plan->shape[d] = length < 0 ? -1 : static_cast<int64_t>(length);
    if (plan->shape[d] < 0)
      return Status::invalidModel("pads " + shapeToString(pads) + " crop more than dimension " + std::to_string(d) +
                                  " of input shape " + shapeToString(in) + " holds");
    if (plan->mode != PadMode::Constant && in[d] == 0 && plan->shape[d] > 0)
      return Status::invalidModel("cannot pad the empty dimension " + std::to_string(d) + " of " + shapeToString(in) +
                                  " in a mode that reads the input");
  }
  return Status::ok();
}

// The input coordinate that output coordinate `o` of one axis reads, or -1 for the constant.
// Coordinates outside the input reflect, clamp or wrap against the whole input dimension,
// also when the other side is cropped.
int64_t sourceIndex(PadMode mode, int64_t o, int64_t begin, int64_t dim) {
  const __int128 i = static_cast<__int128>(o) - begin;  // begin may be INT64_MIN
  if (i >= 0 && i < dim) return static_cast<int64_t>(i);
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return i < 0 ? 0 : dim - 1;
    case PadMode::Wrap: return static_cast<int64_t>(((i % dim) + dim) % dim);
    case PadMode::Reflect: {
      if (dim == 1) return 0;
      const int64_t period = 2 * (dim - 1);  // 0 1 .. dim-1 .. 1, repeated (as numpy's reflect)
      const int64_t m = static_cast<int64_t>(((i % period) + period) % period);
      return m < dim ? m : period - m;
    }
  }
  return -1;
}

std::vector<int64_t> axisMap(const PadPlan& plan, const Shape& in, size_t d) {
  std::vector<int64_t> map(plan.shape[d]);
  for (int64_t o = 0; o < plan.shape[d]; ++o) map[o] = sourceIndex(plan.mode, o, plan.begin[d], in[d]);
  return map;
}

Status padShape(const Node& node, const TensorViews& inputs, TensorViews& outputs) {
  if (inputs[0].dtype == DataType::String) return Status::unsupported("string tensors are not supported here yet");
  if (inputs.size() > 2 && inputs[2].present) {
    if (inputs[2].dtype != inputs[0].dtype)
      return Status::invalidModel("constant_value has dtype " + std::string(dataTypeName(inputs[2].dtype)) +
                                  " but data has " + dataTypeName(inputs[0].dtype));
    if (inputs[2].elements() > 1)
      return Status::invalidModel("constant_value must hold one value, got shape " + shapeToString(inputs[2].shape));
  }
  PadPlan plan;
  OSPREY_RETURN_IF_ERROR(computePad(node, inputs, &plan));
  outputs[0].dtype = inputs[0].dtype;
  outputs[0].shape = plan.shape;
  return Status::ok();
}

Status padReference(const Node& node, const TensorViews& inputs, TensorViews& outputs, ThreadPool*) {
  PadPlan plan;
  OSPREY_RETURN_IF_ERROR(computePad(node, inputs, &plan));
  const Shape& in = inputs[0].shape;
  const size_t rank = in.size(), elem = dataTypeSize(inputs[0].dtype);
  if (outputs[0].elements() == 0) return Status::ok();  // no maps of axes that are padded but empty
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t d = 0; d < rank; ++d) maps[d] = axisMap(plan, in, d);
  const std::vector<int64_t> inStrides = stridesOf(in);
  std::vector<uint8_t> constant(elem, 0);  // an absent or empty constant_value means zero
  if (inputs.size() > 2 && inputs[2].present && inputs[2].elements() == 1) std::memcpy(constant.data(), inputs[2].data, elem);
  const auto* src = static_cast<const uint8_t*>(inputs[0].data);
  auto* dst = static_cast<uint8_t*>(outputs[0].data);
  const int64_t total = outputs[0].elements();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < total; ++o) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) {
      int64_t s = maps[d][idx[d]];
      inside = s >= 0;
      offset += s * inStrides[d];
    }
    std::memcpy(dst + o * elem, inside ? src + offset * elem : constant.data(), elem);
    for (int d = static_cast<int>(rank) - 1; d >= 0 && ++idx[d] == plan.shape[d]; --d) idx[d] = 0;
  }
  return Status::ok();
}

// A stretch of output coordinates along one axis whose source coordinates step evenly.
struct Run {
  int64_t outStart, length, inStart, inStep;
};

std::vector<Run> runsOf(const std::vector<int64_t>& map) {
  std::vector<Run> runs;
  for (int64_t o = 0; o < static_cast<int64_t>(map.size()); ++o) {
    if (map[o] < 0) continue;
    if (!runs.empty()) {
      Run& r = runs.back();
      const bool adjacent = r.outStart + r.length == o;
      if (adjacent && r.length == 1) {
        r.inStep = map[o] - r.inStart;
        ++r.length;
        continue;
      }
      if (adjacent && map[o] == r.inStart + r.length * r.inStep) {
        ++r.length;
        continue;
      }
    }
    runs.push_back({o, 1, map[o], 1});
  }
  return runs;
}

// Reads constant_value as the double that a Raster fill stores; false when it is not known
// at resize time or a double cannot hold it exactly (large 64-bit integers).
bool fillValueOf(const TensorViews& inputs, double* value) {
  *value = 0.0;
  if (inputs.size() <= 2 || !inputs[2].present || inputs[2].elements() == 0) return true;
  if (!inputs[2].hasValue()) return false;
  const TensorView& c = inputs[2];
  constexpr int64_t kExact = int64_t{1} << 53;  // doubles hold every integer up to here
  if (c.dtype == DataType::Int64) {
    const int64_t v = *c.as<const int64_t>();
    if (v > kExact || v < -kExact) return false;
  }
  if (c.dtype == DataType::UInt64 && *c.as<const uint64_t>() > static_cast<uint64_t>(kExact)) return false;
  *value = loadAsDouble(c.dtype, c.data, 0);
  return !(*value == 0.0 && std::signbit(*value));  // executeRaster would fill -0.0 as +0.0
}

Status lowerPad(const Node& node, const TensorViews& inputs, const TensorViews& outputs, std::vector<RasterPlan>& plans) {
  PadPlan plan;
  OSPREY_RETURN_IF_ERROR(computePad(node, inputs, &plan));
  RasterPlan raster;
  if (plan.mode == PadMode::Constant && !fillValueOf(inputs, &raster.fillValue)) return Status::ok();  // declined
  const Shape& in = inputs[0].shape;
  const size_t rank = in.size();
  std::vector<std::vector<Run>> runs(rank);
  int64_t boxes = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (plan.shape[d] > kMaxMappedAxis) return Status::ok();  // declined: the kernel pads it
    runs[d] = runsOf(axisMap(plan, in, d));
    boxes *= static_cast<int64_t>(runs[d].size());
    if (boxes > kMaxBoxes) return Status::ok();  // declined: too fragmented, the kernel is faster
  }
  int64_t covered = boxes == 0 ? 0 : 1;
  for (size_t d = 0; d < rank && covered; ++d) {
    int64_t len = 0;
    for (const Run& r : runs[d]) len += r.length;
    covered *= len;
  }
  raster.fill = covered < outputs[0].elements();
  const std::vector<int64_t> inStrides = stridesOf(in), outStrides = stridesOf(plan.shape);
  std::vector<size_t> pick(rank, 0);
  for (int64_t b = 0; b < boxes; ++b) {
    int64_t srcOffset = 0, dstOffset = 0;
    std::vector<int64_t> srcStrides(rank);
    Shape size(rank);
    for (size_t d = 0; d < rank; ++d) {
      const Run& r = runs[d][pick[d]];
      srcOffset += r.inStart * inStrides[d];
      dstOffset += r.outStart * outStrides[d];
      srcStrides[d] = r.inStep * inStrides[d];
      size[d] = r.length;
    }
    appendBoxCopy(raster.regions, 0, srcOffset, srcStrides, dstOffset, outStrides, size);
    for (int d = static_cast<int>(rank) - 1; d >= 0 && ++pick[d] == runs[d].size(); --d) pick[d] = 0;
  }
  plans.assign(1, std::move(raster));
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Pad = {OpType::Pad, "Pad", 2, 4, 1, 1, padShape, padReference, lowerPad, (1u << 1) | (1u << 3), false};

}  // namespace osprey
