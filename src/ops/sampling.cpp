// GridSample (opset 22, any number of spatial dims), AffineGrid (opset 20) and Col2Im (opset 18).
//
// GridSample follows the ONNX reference (itself PyTorch's): grid values in [-1, 1] map to
// pixel coordinates (align_corners: -1 and 1 are the centres of the corner pixels, otherwise
// their outer edges); the last grid component indexes the last spatial dim. Coordinates outside
// the valid range are first clamped (border) or reflected (reflection); interpolation then reads
// taps outside the input as 0 (zeros), the nearest edge pixel (border) or the reflected pixel
// (reflection). Nearest rounds half to even in any rank (the ONNX test data does so in 3-D too).
// Cubic uses Keys' kernel with a = -0.75 over 4 taps per dim; the older mode names bilinear and
// bicubic are accepted as linear and cubic.
#include <cmath>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

enum class SampleMode { Nearest, Linear, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct GridSetup {
  SampleMode mode = SampleMode::Linear;
  Padding padding = Padding::Zeros;
  bool alignCorners = false;
  int rank = 0;  // spatial dims
};

Status setupGrid(const Node& node, const TensorViews& in, GridSetup* s) {
  const TensorView &x = in[0], &grid = in[1];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "X"));
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(grid, "grid"));
  if (x.rank() < 3)
    return Status::invalidModel("X " + shapeToString(x.shape) + " must have rank 3 or more (N, C, spatial...)");
  s->rank = static_cast<int>(x.rank()) - 2;
  if (grid.rank() != x.rank() || grid.shape[0] != x.shape[0] || grid.shape.back() != s->rank)
    return Status::invalidModel("grid " + shapeToString(grid.shape) + " must have shape (N, out spatial..., " +
                                std::to_string(s->rank) + ") for X " + shapeToString(x.shape));
  const std::string mode = node.getString("mode", "linear");
  if (mode == "linear" || mode == "bilinear")
    s->mode = SampleMode::Linear;
  else if (mode == "nearest")
    s->mode = SampleMode::Nearest;
  else if (mode == "cubic" || mode == "bicubic")
    s->mode = SampleMode::Cubic;
  else
    return Status::invalidModel("mode '" + mode + "' is not linear, nearest or cubic");
  const std::string padding = node.getString("padding_mode", "zeros");
  if (padding == "zeros")
    s->padding = Padding::Zeros;
  else if (padding == "border")
    s->padding = Padding::Border;
  else if (padding == "reflection")
    s->padding = Padding::Reflection;
  else
    return Status::invalidModel("padding_mode '" + padding + "' is not zeros, border or reflection");
  const int64_t align = node.getInt("align_corners", 0);
  if (align != 0 && align != 1) return Status::invalidModel("align_corners must be 0 or 1, got " + std::to_string(align));
  s->alignCorners = align == 1;
  return Status::ok();
}

Status gridSampleShape(const Node& node, const TensorViews& in, TensorViews& out) {
  GridSetup s;
  OSPREY_RETURN_IF_ERROR(setupGrid(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = {in[0].shape[0], in[0].shape[1]};
  for (int d = 0; d < s.rank; ++d) out[0].shape.push_back(in[1].shape[1 + d]);
  return Status::ok();
}

// Reflects x into [lo, hi] by bouncing off the nearer border until inside.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi, n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubicWeights(double t, double w[4]) {
  const double a = -0.75;
  auto near = [&](double x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };        // |x| <= 1
  auto far = [&](double x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

Status gridSampleKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  GridSetup s;
  OSPREY_RETURN_IF_ERROR(setupGrid(node, in, &s));
  const TensorView &x = in[0], &grid = in[1];
  const int r = s.rank;
  const int64_t batch = x.shape[0], channels = x.shape[1];
  std::vector<int64_t> inDims(x.shape.begin() + 2, x.shape.end()), inStrides(static_cast<size_t>(r), 1);
  for (int d = r - 1; d > 0; --d) inStrides[d - 1] = inStrides[d] * inDims[d];
  const int64_t inSize = r ? inStrides[0] * inDims[0] : 1;
  int64_t outSize = 1;
  for (int d = 0; d < r; ++d) outSize *= grid.shape[1 + d];
  const std::vector<double> g = [&] {
    std::vector<double> v(static_cast<size_t>(grid.elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = loadAsDouble(grid.dtype, grid.data, static_cast<int64_t>(i));
    return v;
  }();
  bool ok = dispatchFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xs = x.as<const T>();
    T* ys = out[0].as<T>();
    parallelFor(pool, batch * outSize, [&](int64_t p0, int64_t p1) {
      // Per spatial dim: tap indices into the input (-1: reads zero) and their weights.
      std::vector<int64_t> tapIndex(static_cast<size_t>(r * 4));
      std::vector<double> tapWeight(static_cast<size_t>(r * 4));
      std::vector<int> taps(static_cast<size_t>(r)), pick(static_cast<size_t>(r));
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / outSize, o = p % outSize;
        const double* gp = g.data() + (n * outSize + o) * r;
        for (int d = 0; d < r; ++d) {
          const int64_t size = inDims[d];
          const double lo = s.alignCorners ? 0.0 : -0.5, hi = s.alignCorners ? size - 1.0 : size - 0.5;
          const double gv = gp[r - 1 - d];
          double c = static_cast<float>(s.alignCorners ? (gv + 1) / 2.0 * (size - 1) : ((gv + 1) * size - 1) / 2.0);
          // Beyond a few pixels outside, zeros and border padding read the same taps however far
          // out a point is; limiting it keeps the integer casts defined (NaN reads as outside).
          if (!std::isfinite(c) || s.padding != Padding::Reflection)
            c = std::isnan(c) ? -4.0 - size : std::min(std::max(c, -4.0 - size), 2.0 * size + 4);
          if (s.mode == SampleMode::Nearest) c = std::nearbyint(c);
          if (c < lo || c > hi) {
            if (s.padding == Padding::Border) c = std::min(std::max(c, 0.0), size - 1.0);
            if (s.padding == Padding::Reflection) c = reflect(c, lo, hi);
          }
          auto tap = [&](int64_t i) -> int64_t {
            if (i >= 0 && i < size) return i;
            if (s.padding == Padding::Zeros) return -1;
            if (s.padding == Padding::Border) return std::min<int64_t>(std::max<int64_t>(i, 0), size - 1);
            const int64_t j = static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi));
            return std::min<int64_t>(std::max<int64_t>(j, 0), size - 1);
          };
          int64_t* ti = tapIndex.data() + d * 4;
          double* tw = tapWeight.data() + d * 4;
          if (s.mode == SampleMode::Nearest) {
            taps[d] = 1;
            ti[0] = tap(static_cast<int64_t>(c));
            tw[0] = 1;
          } else {
            const int64_t i0 = static_cast<int64_t>(std::floor(c));
            const double t = c - static_cast<double>(i0);
            if (s.mode == SampleMode::Linear) {
              taps[d] = 2;
              ti[0] = tap(i0), ti[1] = tap(i0 + 1);
              tw[0] = 1 - t, tw[1] = t;
            } else {
              taps[d] = 4;
              for (int k = 0; k < 4; ++k) ti[k] = tap(i0 - 1 + k);
              cubicWeights(t, tw);
            }
          }
        }
        for (int64_t ch = 0; ch < channels; ++ch) {
          const T* plane = xs + (n * channels + ch) * inSize;
          double sum = 0;
          std::fill(pick.begin(), pick.end(), 0);
          while (true) {
            double w = 1;
            int64_t at = 0;
            bool zero = false;
            for (int d = 0; d < r; ++d) {
              const int64_t i = tapIndex[d * 4 + pick[d]];
              w *= tapWeight[d * 4 + pick[d]];
              zero = zero || i < 0;
              at += i * inStrides[d];
            }
            if (!zero) sum += w * static_cast<double>(C(plane[at]));
            int d = r - 1;
            for (; d >= 0; --d) {
              if (++pick[d] < taps[d]) break;
              pick[d] = 0;
            }
            if (d < 0) break;
          }
          ys[(n * channels + ch) * outSize + o] = T(C(sum));
        }
      }
    });
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(x, "X"));
}

// ---- AffineGrid: theta (N, 2, 3) or (N, 3, 4), size [N, C, H, W] or [N, C, D, H, W] ----

Status affineGridShape(const Node& node, const TensorViews& in, TensorViews& out) {
  const TensorView& theta = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(theta, "theta"));
  std::vector<int64_t> size;
  OSPREY_RETURN_IF_ERROR(in[1].readInts(&size, "size (input 1)"));
  if (size.size() != 4 && size.size() != 5)
    return Status::invalidModel("size " + shapeToString(size) + " must have 4 (N, C, H, W) or 5 (N, C, D, H, W) values");
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  if (theta.shape != Shape{size[0], r, r + 1})
    return Status::invalidModel("theta " + shapeToString(theta.shape) + " must have shape [" + std::to_string(size[0]) +
                                ", " + std::to_string(r) + ", " + std::to_string(r + 1) + "] for size " +
                                shapeToString(size));
  for (int64_t v : size)
    if (v < 0) return Status::invalidModel("size " + shapeToString(size) + " must not be negative");
  const int64_t align = node.getInt("align_corners", 0);
  if (align != 0 && align != 1) return Status::invalidModel("align_corners must be 0 or 1, got " + std::to_string(align));
  out[0].dtype = theta.dtype;
  out[0].shape = {size[0]};
  for (int64_t d = 2; d < static_cast<int64_t>(size.size()); ++d) out[0].shape.push_back(size[d]);
  out[0].shape.push_back(r);
  return Status::ok();
}

Status affineGridKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  std::vector<int64_t> size;
  OSPREY_RETURN_IF_ERROR(in[1].readInts(&size, "size (input 1)"));
  const bool align = node.getInt("align_corners", 0) == 1;
  const int r = static_cast<int>(size.size()) - 2;
  // Normalised coordinate of index i along a dim of n pixels.
  auto coord = [&](int64_t i, int64_t n) -> double {
    if (align) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n) - 1.0;
  };
  const int64_t d0 = r == 3 ? size[2] : 1, h = size[r == 3 ? 3 : 2], w = size[r == 3 ? 4 : 3];
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* theta = in[0].as<const T>();
    T* y = out[0].as<T>();
    int64_t at = 0;
    for (int64_t n = 0; n < size[0]; ++n) {
      const T* th = theta + n * r * (r + 1);
      for (int64_t z = 0; z < d0; ++z)
        for (int64_t yy = 0; yy < h; ++yy)
          for (int64_t xx = 0; xx < w; ++xx) {
            // Homogeneous base point (x, y[, z], 1); output component k = theta[k] . point.
            const double pt[4] = {coord(xx, w), coord(yy, h), r == 3 ? coord(z, d0) : 1.0, 1.0};
            for (int k = 0; k < r; ++k) {
              double v = 0;
              for (int j = 0; j < r; ++j) v += static_cast<double>(C(th[k * (r + 1) + j])) * pt[j];
              v += static_cast<double>(C(th[k * (r + 1) + r]));
              y[at++] = T(C(v));
            }
          }
    }
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "theta"));
}

// ---- Col2Im: input (N, C * prod(block), L), image_shape, block_shape ----

struct Col2ImSetup {
  std::vector<int64_t> image, block, dilation, stride, padBegin, blocksPerDim;
  int64_t channels = 0, blockSize = 1, locations = 1;
};

Status setupCol2Im(const Node& node, const TensorViews& in, Col2ImSetup* s) {
  const TensorView& x = in[0];
  OSPREY_RETURN_IF_ERROR(requireFloatDtype(x, "input"));
  OSPREY_RETURN_IF_ERROR(in[1].readInts(&s->image, "image_shape (input 1)"));
  OSPREY_RETURN_IF_ERROR(in[2].readInts(&s->block, "block_shape (input 2)"));
  const size_t r = s->image.size();
  if (r == 0 || s->block.size() != r)
    return Status::invalidModel("image_shape " + shapeToString(s->image) + " and block_shape " +
                                shapeToString(s->block) + " must have the same, non-zero length");
  if (x.rank() != 3) return Status::invalidModel("input " + shapeToString(x.shape) + " must be (N, C * block, L)");
  auto perDim = [&](const char* name, int64_t fallback, std::vector<int64_t>* v, size_t count) -> Status {
    *v = node.getInts(name, std::vector<int64_t>(count, fallback));
    if (v->size() != count)
      return Status::invalidModel(std::string(name) + " " + shapeToString(*v) + " must have " + std::to_string(count) +
                                  " values");
    return Status::ok();
  };
  std::vector<int64_t> pads;
  OSPREY_RETURN_IF_ERROR(perDim("dilations", 1, &s->dilation, r));
  OSPREY_RETURN_IF_ERROR(perDim("strides", 1, &s->stride, r));
  OSPREY_RETURN_IF_ERROR(perDim("pads", 0, &pads, 2 * r));
  s->padBegin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(r));
  s->blockSize = 1, s->locations = 1;
  s->blocksPerDim.clear();
  for (size_t d = 0; d < r; ++d) {
    if (s->block[d] < 1 || s->dilation[d] < 1 || s->stride[d] < 1 || s->image[d] < 0 || pads[d] < 0 || pads[r + d] < 0)
      return Status::invalidModel("block_shape, dilations and strides must be positive and pads not negative");
    const int64_t extent = (s->block[d] - 1) * s->dilation[d] + 1;
    const int64_t span = s->image[d] + pads[d] + pads[r + d] - extent;
    if (span < 0)
      return Status::invalidModel("block " + shapeToString(s->block) + " does not fit the padded image " +
                                  shapeToString(s->image));
    s->blocksPerDim.push_back(span / s->stride[d] + 1);
    s->blockSize *= s->block[d];
    s->locations *= s->blocksPerDim.back();
  }
  if (x.shape[1] % s->blockSize != 0 || x.shape[2] != s->locations)
    return Status::invalidModel("input " + shapeToString(x.shape) + " must be (N, C * " + std::to_string(s->blockSize) +
                                ", " + std::to_string(s->locations) + ") for these image and block shapes");
  s->channels = x.shape[1] / s->blockSize;
  return Status::ok();
}

Status col2ImShape(const Node& node, const TensorViews& in, TensorViews& out) {
  Col2ImSetup s;
  OSPREY_RETURN_IF_ERROR(setupCol2Im(node, in, &s));
  out[0].dtype = in[0].dtype;
  out[0].shape = {in[0].shape[0], s.channels};
  for (int64_t v : s.image) out[0].shape.push_back(v);
  return Status::ok();
}

Status col2ImKernel(const Node& node, const TensorViews& in, TensorViews& out, ThreadPool*) {
  Col2ImSetup s;
  OSPREY_RETURN_IF_ERROR(setupCol2Im(node, in, &s));
  const size_t r = s.image.size();
  int64_t imageSize = 1;
  for (int64_t v : s.image) imageSize *= v;
  const int64_t batch = in[0].shape[0];
  bool ok = dispatchFloat(in[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* x = in[0].as<const T>();
    std::vector<double> acc(static_cast<size_t>(batch * s.channels * imageSize), 0.0);
    std::vector<int64_t> k(r), l(r);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < s.channels; ++c)
        for (int64_t kb = 0; kb < s.blockSize; ++kb) {
          // Multi-index of the kernel tap kb (last dim fastest).
          for (int64_t rest = kb, d = static_cast<int64_t>(r) - 1; d >= 0; --d) k[d] = rest % s.block[d], rest /= s.block[d];
          const T* row = x + ((n * s.channels + c) * s.blockSize + kb) * s.locations;
          for (int64_t loc = 0; loc < s.locations; ++loc) {
            for (int64_t rest = loc, d = static_cast<int64_t>(r) - 1; d >= 0; --d)
              l[d] = rest % s.blocksPerDim[d], rest /= s.blocksPerDim[d];
            int64_t at = 0;
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              const int64_t i = l[d] * s.stride[d] - s.padBegin[d] + k[d] * s.dilation[d];
              inside = inside && i >= 0 && i < s.image[d];
              at = at * s.image[d] + i;
            }
            if (inside) acc[(n * s.channels + c) * imageSize + at] += static_cast<double>(C(row[loc]));
          }
        }
    T* y = out[0].as<T>();
    for (size_t i = 0; i < acc.size(); ++i) y[i] = T(C(acc[i]));
  });
  return ok ? Status::ok() : Status::unsupported(dtypeError(in[0], "input"));
}

}  // namespace

const OpDef kOpDef_GridSample = {
    OpType::GridSample, "GridSample", 2, 2, 1, 1, gridSampleShape, gridSampleKernel, nullptr, 0, false};
const OpDef kOpDef_AffineGrid = {
    OpType::AffineGrid, "AffineGrid", 2, 2, 1, 1, affineGridShape, affineGridKernel, nullptr, 1u << 1, false};
const OpDef kOpDef_Col2Im = {
    OpType::Col2Im, "Col2Im", 3, 3, 1, 1, col2ImShape, col2ImKernel, nullptr, (1u << 1) | (1u << 2), false};

}  // namespace osprey
