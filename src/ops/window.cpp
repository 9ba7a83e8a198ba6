#include "ops/window.h"

#include <string>

namespace osprey {

namespace {

std::string listToString(const std::vector<int64_t>& v) { return shapeToString(v); }

Status readPerDim(const Node& node, const char* name, int rank, int64_t minValue, int64_t* slots) {
  const Attribute* a = node.attr(name);
  if (!a) return Status::ok();
  if (static_cast<int>(a->ints.size()) != rank)
    return Status::invalidModel(std::string(name) + " " + listToString(a->ints) + " must have " + std::to_string(rank) +
                                " values, one per spatial dimension");
  for (int d = 0; d < rank; ++d) {
    if (a->ints[d] < minValue || a->ints[d] > kMaxWindowValue)
      return Status::invalidModel(std::string(name) + " " + listToString(a->ints) + " must be in [" +
                                  std::to_string(minValue) + ", " + std::to_string(kMaxWindowValue) + "]");
    slots[3 - rank + d] = a->ints[d];
  }
  return Status::ok();
}

}  // namespace

Status readWindow(const Node& node, const Shape& inSpatial, const std::vector<int64_t>& kernel, Window* w) {
  *w = Window();
  const int rank = static_cast<int>(inSpatial.size());
  if (rank < 1) return Status::invalidModel("input needs at least one spatial dimension");
  if (rank > kMaxSpatialRank)
    return Status::unsupported(std::to_string(rank) + " spatial dimensions (at most " +
                               std::to_string(kMaxSpatialRank) + " are supported)");
  if (static_cast<int>(kernel.size()) != rank)
    return Status::invalidModel("kernel_shape " + listToString(kernel) + " must have " + std::to_string(rank) +
                                " values for input spatial shape " + shapeToString(inSpatial));
  w->rank = rank;
  for (int d = 0; d < rank; ++d) {
    if (kernel[d] < 1 || kernel[d] > kMaxWindowValue)
      return Status::invalidModel("kernel_shape " + listToString(kernel) + " must be in [1, " + std::to_string(kMaxWindowValue) + "]");
    if (inSpatial[d] > kMaxWindowValue)
      return Status::unsupported("spatial shape " + shapeToString(inSpatial) + " has a dimension above " +
                                 std::to_string(kMaxWindowValue));
    w->kernel[3 - rank + d] = kernel[d];
    w->in[3 - rank + d] = inSpatial[d];
  }
  OSPREY_RETURN_IF_ERROR(readPerDim(node, "strides", rank, 1, w->stride));
  OSPREY_RETURN_IF_ERROR(readPerDim(node, "dilations", rank, 1, w->dilation));
  std::string autoPad = node.getString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET" || autoPad.empty())
    w->autoPad = AutoPad::NotSet;
  else if (autoPad == "SAME_UPPER")
    w->autoPad = AutoPad::SameUpper;
  else if (autoPad == "SAME_LOWER")
    w->autoPad = AutoPad::SameLower;
  else if (autoPad == "VALID")
    w->autoPad = AutoPad::Valid;
  else
    return Status::invalidModel("auto_pad '" + autoPad + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  // Explicit pads only count when auto_pad is NOTSET (the spec says they are not used otherwise).
  if (const Attribute* p = node.attr("pads"); p && w->autoPad == AutoPad::NotSet) {
    if (static_cast<int>(p->ints.size()) != 2 * rank)
      return Status::invalidModel("pads " + listToString(p->ints) + " must have " + std::to_string(2 * rank) +
                                  " values (begins then ends)");
    for (int d = 0; d < rank; ++d) {
      if (p->ints[d] < 0 || p->ints[rank + d] < 0 || p->ints[d] > kMaxWindowValue || p->ints[rank + d] > kMaxWindowValue)
        return Status::invalidModel("pads " + listToString(p->ints) + " must be in [0, " + std::to_string(kMaxWindowValue) + "]");
      w->padBegin[3 - rank + d] = p->ints[d];
      w->padEnd[3 - rank + d] = p->ints[rank + d];
    }
  }
  return Status::ok();
}

Status resolveForwardWindow(bool ceilMode, Window* w) {
  for (int s = 3 - w->rank; s < 3; ++s) {
    const int64_t in = w->in[s], stride = w->stride[s], extent = w->extent(s);
    if (w->autoPad == AutoPad::SameUpper || w->autoPad == AutoPad::SameLower) {
      w->out[s] = ceilDiv(in, stride);
      int64_t total = (w->out[s] - 1) * stride + extent - in;
      if (total < 0) total = 0;
      // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning.
      w->padBegin[s] = w->autoPad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      w->padEnd[s] = total - w->padBegin[s];
      continue;
    }
    const int64_t span = in + w->padBegin[s] + w->padEnd[s] - extent;
    if (span < 0)
      return Status::invalidModel("spatial dimension " + std::to_string(s - (3 - w->rank)) + ": the window (kernel " +
                                  std::to_string(w->kernel[s]) + ", dilation " + std::to_string(w->dilation[s]) +
                                  ") is larger than the padded input size " +
                                  std::to_string(in + w->padBegin[s] + w->padEnd[s]));
    if (ceilMode) {
      w->out[s] = ceilDiv(span, stride) + 1;
      // A last window starting inside the end padding would see no input: drop it.
      if ((w->out[s] - 1) * stride >= in + w->padBegin[s]) --w->out[s];
    } else {
      w->out[s] = span / stride + 1;
    }
  }
  return Status::ok();
}

Status readConvWindow(const Node& node, const Shape& x, const Shape& w, Window* out) {
  if (x.size() < 2 || w.size() < 2) return Status::invalidModel("Conv needs X and W of rank 3 or more");
  OSPREY_RETURN_IF_ERROR(readWindow(node, Shape(x.begin() + 2, x.end()), Shape(w.begin() + 2, w.end()), out));
  return resolveForwardWindow(false, out);
}

}  // namespace osprey
