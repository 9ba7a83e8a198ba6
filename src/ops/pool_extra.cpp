// LpPool (p, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode), GlobalLpPool and
// MaxUnpool, over 1 to 3 spatial dimensions. LpPool windows are placed like the other pools
// (window o starts at o*stride - pad_begin); padding contributes zero to the sum of |x|^p.
// MaxUnpool scatters X to the flat positions in I of a tensor of the inferred shape
// ((in - 1) * stride - pads + kernel) and, as the ONNX reference does, places that tensor at
// the origin of output_shape when it is given.
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"
#include "ops/window.h"

namespace osprey {

namespace {

Status readP(const Node& node, int64_t* p) {
  *p = node.getInt("p", 2);
  if (*p < 1) return Status::invalidModel("attribute p is " + std::to_string(*p) + "; it must be >= 1");
  return Status::ok();
}

double lpTerm(double v, int64_t p) {
  const double a = std::fabs(v);
  return p == 1 ? a : p == 2 ? a * a : std::pow(a, static_cast<double>(p));
}

double lpRoot(double sum, int64_t p) {
  return p == 1 ? sum : p == 2 ? std::sqrt(sum) : std::pow(sum, 1.0 / static_cast<double>(p));
}

Status setupLpPool(const Node& node, const TensorViews& in, Window* w, int64_t* p) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  if (!node.hasAttr("kernel_shape")) return Status::invalidModel("kernel_shape is required");
  OSPREY_RETURN_IF_ERROR(readP(node, p));
  const int64_t ceilMode = node.getInt("ceil_mode", 0);
  if (ceilMode != 0 && ceilMode != 1)
    return Status::invalidModel("ceil_mode must be 0 or 1, got " + std::to_string(ceilMode));
  OSPREY_RETURN_IF_ERROR(readWindow(node, Shape(x.shape.begin() + 2, x.shape.end()), node.getInts("kernel_shape"), w));
  return resolveForwardWindow(ceilMode == 1, w);
}

Status lpPoolShape(const Node& node, const TensorViews& in, TensorViews& out) {
  Window w;
  int64_t p;
  OSPREY_RETURN_IF_ERROR(setupLpPool(node, in, &w, &p));
  out[0].dtype = in[0].dtype;
  out[0].shape = {in[0].shape[0], in[0].shape[1]};
  for (int64_t d : w.outShape()) out[0].shape.push_back(d);
  return Status::ok();
}

Status lpPoolKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  Window g;
  int64_t p;
  OSPREY_RETURN_IF_ERROR(setupLpPool(node, in, &g, &p));
  const int64_t planes = in[0].shape[0] * in[0].shape[1];
  const int64_t inSize = g.inSize(), outSize = g.outSize();
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    parallelFor(pool, planes, [&](int64_t b, int64_t e) {
      for (int64_t plane = b; plane < e; ++plane) {
        const T* xp = x + plane * inSize;
        for (int64_t o = 0; o < outSize; ++o) {
          const int64_t pos[3] = {o / (g.out[1] * g.out[2]), (o / g.out[2]) % g.out[1], o % g.out[2]};
          double sum = 0;
          for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
            const int64_t id = pos[0] * g.stride[0] - g.padBegin[0] + kd * g.dilation[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
              const int64_t ih = pos[1] * g.stride[1] - g.padBegin[1] + kh * g.dilation[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                const int64_t iw = pos[2] * g.stride[2] - g.padBegin[2] + kw * g.dilation[2];
                if (iw < 0 || iw >= g.in[2]) continue;
                sum += lpTerm(static_cast<double>(C(xp[(id * g.in[1] + ih) * g.in[2] + iw])), p);
              }
            }
          }
          y[plane * outSize + o] = T(C(lpRoot(sum, p)));
        }
      }
    });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "X"));
}

// ---- GlobalLpPool ----

Status globalLpPoolShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "X"));
  int64_t p;
  OSPREY_RETURN_IF_ERROR(readP(node, &p));
  if (in[0].rank() < 2)
    return Status::invalidModel("X " + shapeToString(in[0].shape) + " must have rank 2 or more (N, C, spatial...)");
  out[0].dtype = in[0].dtype;
  out[0].shape = Shape(in[0].shape.size(), 1);
  out[0].shape[0] = in[0].shape[0];
  out[0].shape[1] = in[0].shape[1];
  return Status::ok();
}

Status globalLpPoolKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  int64_t p;
  OSPREY_RETURN_IF_ERROR(readP(node, &p));
  const int64_t planes = in[0].shape[0] * in[0].shape[1];
  const int64_t size = planes ? in[0].elements() / planes : 0;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    for (int64_t plane = 0; plane < planes; ++plane) {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += lpTerm(static_cast<double>(C(x[plane * size + i])), p);
      out[0].as<T>()[plane] = T(C(lpRoot(sum, p)));
    }
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "X"));
}

// ---- MaxUnpool ----

Status unpoolShapes(const Node& node, const TensorViews& in, Shape* inferred, Shape* outShape) {
  const TensorView &x = in[0], &indices = in[1];
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  if (indices.dtype != DataType::Int64)
    return Status::invalidModel("I (input 1) has dtype " + std::string(dataTypeName(indices.dtype)) +
                                "; expected int64");
  if (indices.shape != x.shape)
    return Status::invalidModel("I " + shapeToString(indices.shape) + " must have the shape of X " +
                                shapeToString(x.shape));
  if (!node.hasAttr("kernel_shape")) return Status::invalidModel("kernel_shape is required");
  Window w;
  OSPREY_RETURN_IF_ERROR(readWindow(node, Shape(x.shape.begin() + 2, x.shape.end()), node.getInts("kernel_shape"), &w));
  *inferred = {x.shape[0], x.shape[1]};
  for (int s = 3 - w.rank; s < 3; ++s) {
    const int64_t size = (w.in[s] - 1) * w.stride[s] - w.padBegin[s] - w.padEnd[s] + w.kernel[s];
    if (size < 0)
      return Status::invalidModel("the pads leave a negative output size for spatial dimension " +
                                  std::to_string(s - (3 - w.rank)));
    inferred->push_back(size);
  }
  *outShape = *inferred;
  if (in.size() > 2 && in[2].present) {
    std::vector<int64_t> requested;
    OSPREY_RETURN_IF_ERROR(in[2].readInts(&requested, "output_shape (input 2)"));
    if (requested.size() != inferred->size())
      return Status::invalidModel("output_shape " + shapeToString(requested) + " must have " +
                                  std::to_string(inferred->size()) + " values");
    for (size_t d = 0; d < requested.size(); ++d)
      if (requested[d] < (*inferred)[d] || (d < 2 && requested[d] != (*inferred)[d]))
        return Status::invalidModel("output_shape " + shapeToString(requested) +
                                    " is smaller than the unpooled shape " + shapeToString(*inferred) +
                                    " (or changes N or C)");
    *outShape = requested;
  }
  return Status::ok();
}

Status maxUnpoolShape(const Node& node, const TensorViews& in, TensorViews& out) {
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(in[0], "X"));
  Shape inferred, shape;
  OSPREY_RETURN_IF_ERROR(unpoolShapes(node, in, &inferred, &shape));
  out[0].dtype = in[0].dtype;
  out[0].shape = shape;
  return Status::ok();
}

Status maxUnpoolKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  Shape inferred, shape;
  OSPREY_RETURN_IF_ERROR(unpoolShapes(node, in, &inferred, &shape));
  const int64_t inferredSize = shapeElements(inferred);
  // Flat position in `inferred` -> flat position in `shape` (same origin, larger extents).
  auto place = [&](int64_t flat) {
    int64_t o = 0, stride = 1;
    for (size_t d = inferred.size(); d-- > 0;) {
      o += (flat % inferred[d]) * stride;
      flat /= inferred[d];
      stride *= shape[d];
    }
    return o;
  };
  const int64_t* idx = in[1].as<const int64_t>();
  Status st;
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in[0].as<const T>();
    T* y = out[0].as<T>();
    for (int64_t i = 0; i < out[0].elements(); ++i) y[i] = T(0.0f);
    for (int64_t i = 0; i < in[0].elements(); ++i) {
      if (idx[i] < 0 || idx[i] >= inferredSize) {
        st = Status::invalidArgument("index " + std::to_string(idx[i]) + " at position " + std::to_string(i) +
                                     " of I is outside the unpooled tensor " + shapeToString(inferred));
        return;
      }
      y[place(idx[i])] = x[i];
    }
  });
  if (!ok) return Status::unsupported(dtypeError(in[0], "X"));
  return st;
}

}  // namespace

const OpDef kOpDef_LpPool = {OpType::LpPool, "LpPool", 1, 1, 1, 1, lpPoolShape, lpPoolKernel, nullptr, 0, false};
const OpDef kOpDef_GlobalLpPool = {
    OpType::GlobalLpPool, "GlobalLpPool", 1, 1, 1, 1, globalLpPoolShape, globalLpPoolKernel, nullptr, 0, false};
const OpDef kOpDef_MaxUnpool = {
    OpType::MaxUnpool, "MaxUnpool", 2, 3, 1, 1, maxUnpoolShape, maxUnpoolKernel, nullptr, 1u << 2, false};

}  // namespace osprey
