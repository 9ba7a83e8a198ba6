// Resize against a naive oracle built the way the ONNX reference implementation is: N-d
// interpolation as nested 1-D interpolations, each taking the n nearest samples of an
// edge-padded row and dotting them with the mode's coefficients. The kernel instead sums the
// products of per-axis taps, so the two share no code.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "op_test_util.h"

namespace osprey::test {
namespace {

struct ResizeCase {
  std::string mode = "nearest", coord = "half_pixel", nearestMode = "round_prefer_floor", policy = "stretch";
  double cubicA = -0.75, extrapolation = 0.0;
  bool excludeOutside = false, antialias = false;
  std::vector<int64_t> axes;  // empty: attribute absent
  std::vector<float> scales;  // one of scales and sizes
  std::vector<int64_t> sizes;
  std::vector<float> roi;
};

// ---- the oracle ------------------------------------------------------------------------

double keys(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return (A + 2) * x * x * x - (A + 3) * x * x + 1;
  if (x < 2) return A * x * x * x - 5 * A * x * x + 8 * A * x - 4 * A;
  return 0;
}

// Coefficients for the samples around a coordinate whose distance past its left sample is
// ratio, in (0, 1].
std::vector<double> coefficients(const ResizeCase& c, double ratio, double scale) {
  if (c.mode == "nearest") {
    if (ratio == 1) return {0, 1};
    bool up = c.nearestMode == "round_prefer_floor" ? ratio > 0.5
              : c.nearestMode == "round_prefer_ceil" ? ratio >= 0.5
              : c.nearestMode == "ceil";
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  std::vector<double> w;
  if (!c.antialias) {
    if (c.mode == "linear") return {1 - ratio, ratio};
    return {keys(1 + ratio, c.cubicA), keys(ratio, c.cubicA), keys(1 - ratio, c.cubicA), keys(2 - ratio, c.cubicA)};
  }
  const double s = std::min(scale, 1.0);
  if (c.mode == "linear") {
    const int64_t start = static_cast<int64_t>(std::floor(-1 / s)) + 1;
    for (int64_t i = start; i < start + 2 - 2 * start; ++i) w.push_back(std::clamp(1 - std::fabs((i - ratio) * s), 0.0, 1.0));
  } else {
    const int64_t start = static_cast<int64_t>(std::floor(-2 / s)) + 1;
    for (int64_t i = start; i < 2 - start; ++i) w.push_back(keys(s * (i - ratio), c.cubicA));
  }
  const double sum = std::accumulate(w.begin(), w.end(), 0.0);
  for (double& v : w) v /= sum;
  return w;
}

double interpolate1d(const ResizeCase& c, const std::vector<double>& row, double scale, int64_t outInt, int64_t x,
                     double roiStart, double roiEnd) {
  const double len = static_cast<double>(row.size()), outLen = scale * len, xr = static_cast<double>(x);
  double orig;
  if (c.coord == "align_corners") {
    orig = outLen == 1 ? 0 : xr * (len - 1) / (outLen - 1);
  } else if (c.coord == "asymmetric") {
    orig = xr / scale;
  } else if (c.coord == "tf_crop_and_resize") {
    orig = (outLen == 1 ? (roiEnd - roiStart) * (len - 1) / 2 : xr * (roiEnd - roiStart) * (len - 1) / (outLen - 1)) +
           roiStart * (len - 1);
    if (orig < 0 || orig > len - 1) return c.extrapolation;
  } else if (c.coord == "pytorch_half_pixel") {
    orig = outLen == 1 ? -0.5 : (xr + 0.5) / scale - 0.5;
  } else if (c.coord == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(outInt) / outLen;
    orig = len / 2 * (1 - adjustment) + (xr + 0.5) / scale - 0.5;
  } else {
    orig = (xr + 0.5) / scale - 0.5;
  }
  const double ratio = orig == std::floor(orig) ? 1.0 : orig - std::floor(orig);
  std::vector<double> w = coefficients(c, ratio, scale);
  const int64_t n = static_cast<int64_t>(w.size()), pad = (n + 1) / 2;
  std::vector<double> padded;
  for (int64_t i = -pad; i < static_cast<int64_t>(row.size()) + pad; ++i)
    padded.push_back(row[std::clamp<int64_t>(i, 0, static_cast<int64_t>(row.size()) - 1)]);
  std::vector<int64_t> order(padded.size());
  std::iota(order.begin(), order.end(), 0);
  // Distances in unpadded coordinates: adding pad to orig could round it onto a tie.
  auto distance = [&](int64_t a) { return std::fabs(orig - static_cast<double>(a - pad)); };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return distance(a) < distance(b); });
  order.resize(n);
  std::sort(order.begin(), order.end());
  if (c.excludeOutside) {
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t original = order[k] - pad;
      if (original < 0 || original >= static_cast<int64_t>(row.size())) w[k] = 0;
      sum += w[k];
    }
    for (double& v : w) v /= sum;
  }
  double acc = 0;
  for (int64_t k = 0; k < n; ++k) acc += w[k] * padded[order[k]];
  return acc;
}

// The value at output point `x` of the sub-tensor starting at `data` with `shape`.
double interpolateNd(const ResizeCase& c, const double* data, const Shape& shape, const Shape& out,
                     const std::vector<double>& scales, const std::vector<int64_t>& x, const std::vector<double>& roi,
                     size_t dim) {
  const size_t rank = shape.size();
  int64_t inner = 1;
  for (size_t d = dim + 1; d < rank; ++d) inner *= shape[d];
  std::vector<double> row(shape[dim]);
  for (int64_t i = 0; i < shape[dim]; ++i)
    row[i] = dim + 1 == rank ? data[i] : interpolateNd(c, data + i * inner, shape, out, scales, x, roi, dim + 1);
  return interpolate1d(c, row, scales[dim], out[dim], x[dim], roi[dim], roi[rank + dim]);
}

Tensor naiveResize(const ResizeCase& c, const Tensor& input) {
  const Shape& in = input.shape();
  const size_t rank = in.size();
  std::vector<int64_t> axes = c.axes;
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  for (int64_t& a : axes)
    if (a < 0) a += static_cast<int64_t>(rank);
  std::vector<double> scales(rank, 1.0), roi(2 * rank, 0.0);
  for (size_t d = 0; d < rank; ++d) roi[rank + d] = 1.0;
  for (size_t k = 0; k < c.roi.size() / 2; ++k) {
    roi[axes[k]] = c.roi[k];
    roi[rank + axes[k]] = c.roi[axes.size() + k];
  }
  Shape out = in;
  if (!c.sizes.empty()) {
    for (size_t k = 0; k < axes.size(); ++k) {
      out[axes[k]] = c.sizes[k];
      scales[axes[k]] = static_cast<double>(c.sizes[k]) / static_cast<double>(in[axes[k]]);
    }
    if (c.policy != "stretch") {
      double s = scales[axes[0]];
      for (int64_t a : axes) s = c.policy == "not_larger" ? std::min(s, scales[a]) : std::max(s, scales[a]);
      for (int64_t a : axes) {
        scales[a] = s;
        out[a] = static_cast<int64_t>(s * static_cast<double>(in[a]) + 0.5);
      }
    }
  } else {
    for (size_t k = 0; k < axes.size(); ++k) {
      scales[axes[k]] = c.scales[k];
      out[axes[k]] = static_cast<int64_t>(scales[axes[k]] * static_cast<double>(in[axes[k]]));
    }
  }
  std::vector<double> data(input.elements());
  for (int64_t i = 0; i < input.elements(); ++i) data[i] = at(input, i);
  Tensor result(input.dtype(), out);
  std::vector<int64_t> x(rank, 0);
  for (int64_t o = 0; o < result.elements(); ++o) {
    int64_t rest = o;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      x[d] = rest % out[d];
      rest /= out[d];
    }
    double v = interpolateNd(c, data.data(), in, out, scales, x, roi, 0);
    if (input.dtype() != DataType::Float32 && input.dtype() != DataType::Float16 && input.dtype() != DataType::Float64)
      v = std::trunc(v);
    storeFromDouble(input.dtype(), result.data(), o, v);
  }
  return result;
}

// ---- running the op --------------------------------------------------------------------

Node resizeNode(const ResizeCase& c) {
  Node n;
  n.type = OpType::Resize;
  n.setString("mode", c.mode);
  n.setString("coordinate_transformation_mode", c.coord);
  n.setString("nearest_mode", c.nearestMode);
  n.setString("keep_aspect_ratio_policy", c.policy);
  n.setFloat("cubic_coeff_a", static_cast<float>(c.cubicA));
  n.setFloat("extrapolation_value", static_cast<float>(c.extrapolation));
  n.setInt("exclude_outside", c.excludeOutside);
  n.setInt("antialias", c.antialias);
  if (!c.axes.empty()) n.setInts("axes", c.axes);
  return n;
}

std::vector<OpInput> resizeInputs(const ResizeCase& c, const Tensor& x, bool runtimeScales = false) {
  std::vector<OpInput> inputs = {in(x)};
  inputs.push_back(c.roi.empty() ? absent() : constant(makeTensor<float>({static_cast<int64_t>(c.roi.size())}, c.roi)));
  auto wrapInput = [&](Tensor t) { return runtimeScales ? in(std::move(t)) : constant(std::move(t)); };
  if (!c.scales.empty()) {
    inputs.push_back(wrapInput(makeTensor<float>({static_cast<int64_t>(c.scales.size())}, c.scales)));
  } else {
    inputs.push_back(absent());
    inputs.push_back(wrapInput(makeTensor<int64_t>({static_cast<int64_t>(c.sizes.size())}, c.sizes)));
  }
  return inputs;
}

void checkResize(const ResizeCase& c, const Tensor& x, double atol = 1e-5) {
  std::vector<Tensor> out;
  Status st = runOp(resizeNode(c), resizeInputs(c, x), 1, &out);
  ASSERT_TRUE(st.isOk()) << st.message();
  expectNear(out[0], naiveResize(c, x), atol, 1e-5);
}

const std::vector<std::string> kCoords = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                          "asymmetric"};

TEST(ResizeOp, NearestEveryRoundingAndCoordinateMode) {
  Tensor x = randomTensor(DataType::Float32, {2, 3, 5, 7}, 1);
  for (const std::string& coord : kCoords)
    for (std::string rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
      for (std::vector<float> scales : {std::vector<float>{1, 1, 2.f, 3.f}, {1, 1, 0.6f, 1.7f}, {1, 1, 0.2f, 0.5f}}) {
        ResizeCase c;
        c.coord = coord;
        c.nearestMode = rounding;
        c.scales = scales;
        SCOPED_TRACE(coord + " " + rounding + " " + std::to_string(scales[2]));
        checkResize(c, x);
      }
}

TEST(ResizeOp, LinearAndCubicEveryCoordinateMode) {
  Tensor x = randomTensor(DataType::Float32, {1, 2, 6, 9}, 2);
  for (std::string mode : {"linear", "cubic"})
    for (const std::string& coord : kCoords) {
      for (std::vector<float> scales : {std::vector<float>{1, 1, 2.f, 3.f}, {1, 1, 0.6f, 1.7f}, {1, 1, 0.35f, 0.8f}}) {
        ResizeCase c;
        c.mode = mode;
        c.coord = coord;
        c.scales = scales;
        SCOPED_TRACE(mode + " " + coord + " scales " + std::to_string(scales[2]));
        checkResize(c, x);
      }
      ResizeCase s;
      s.mode = mode;
      s.coord = coord;
      s.sizes = {1, 2, 13, 4};
      SCOPED_TRACE(mode + " " + coord + " sizes");
      checkResize(s, x);
    }
}

TEST(ResizeOp, CubicCoefficientAndExcludeOutside) {
  Tensor x = randomTensor(DataType::Float32, {1, 1, 7, 5}, 3);
  for (double a : {-0.5, -0.75}) {
    for (bool exclude : {false, true}) {
      ResizeCase c;
      c.mode = "cubic";
      c.cubicA = a;
      c.excludeOutside = exclude;
      c.scales = {1, 1, 1.9f, 0.7f};
      checkResize(c, x);
    }
  }
  ResizeCase linear;  // exclude_outside changes nothing for linear with edge samples weighted 0
  linear.mode = "linear";
  linear.excludeOutside = true;
  linear.scales = {1, 1, 3.f, 0.5f};
  checkResize(linear, x);
}

TEST(ResizeOp, Antialias) {
  Tensor x = randomTensor(DataType::Float32, {1, 2, 13, 11}, 4);
  for (std::string mode : {"linear", "cubic"}) {
    for (std::vector<float> scales : {std::vector<float>{1, 1, 0.6f, 0.3f}, {1, 1, 0.5f, 2.f}}) {
      ResizeCase c;
      c.mode = mode;
      c.antialias = true;
      c.scales = scales;
      SCOPED_TRACE(mode);
      checkResize(c, x);
    }
    ResizeCase s;
    s.mode = mode;
    s.antialias = true;
    s.coord = "align_corners";
    s.sizes = {1, 2, 4, 3};
    checkResize(s, x);
  }
}

TEST(ResizeOp, AxesAndAspectRatioPolicies) {
  Tensor x = randomTensor(DataType::Float32, {2, 5, 3, 4}, 5);
  ResizeCase c;
  c.mode = "linear";
  c.axes = {3, -3};
  c.scales = {2.5f, 0.6f};
  checkResize(c, x);
  for (std::string policy : {"stretch", "not_larger", "not_smaller"}) {
    ResizeCase s;
    s.axes = {1, 2};
    s.sizes = {9, 4};
    s.policy = policy;
    SCOPED_TRACE(policy);
    checkResize(s, x);
    s.mode = "cubic";
    checkResize(s, x);
  }
}

TEST(ResizeOp, TfCropAndResize) {
  Tensor x = randomTensor(DataType::Float32, {1, 1, 6, 8}, 6);
  for (std::string mode : {"nearest", "linear", "cubic"}) {
    ResizeCase c;
    c.mode = mode;
    c.coord = "tf_crop_and_resize";
    c.roi = {0, 0, 0.2f, 0.1f, 1, 1, 0.8f, 1.4f};  // the last axis runs past the input
    c.sizes = {1, 1, 5, 7};
    c.extrapolation = 10.0;
    SCOPED_TRACE(mode);
    checkResize(c, x);
    ResizeCase a = c;  // the same through axes, roi given for them only
    a.axes = {3, 2};
    a.roi = {0.1f, 0.2f, 1.4f, 0.8f};
    a.sizes = {7, 5};
    checkResize(a, x);
  }
}

TEST(ResizeOp, OtherRanksAndDtypes) {
  ResizeCase c;
  c.mode = "linear";
  c.scales = {2.5f};
  checkResize(c, randomTensor(DataType::Float32, {7}, 7));
  c.scales = {1.5f, 0.5f, 2.f};
  checkResize(c, randomTensor(DataType::Float64, {3, 4, 2}, 8));
  checkResize(c, randomTensor(DataType::Float16, {3, 4, 2}, 9), 2e-3);
  ResizeCase nearest;
  nearest.scales = {1, 3.f, 0.5f};
  checkResize(nearest, randomTensor(DataType::UInt8, {2, 3, 6}, 10, 0, 255), 0);
  // Integer outputs truncate; the two computations may round differently at whole numbers.
  checkResize(c, randomTensor(DataType::Int32, {3, 4, 2}, 11, -1000, 1000), 1.0);
  ResizeCase one;  // a length-1 axis both ways
  one.mode = "cubic";
  one.sizes = {1, 5};
  checkResize(one, randomTensor(DataType::Float32, {3, 1}, 12));
}

TEST(ResizeOp, ScalesKnownOnlyAtRunTime) {
  ResizeCase c;
  c.mode = "linear";
  c.scales = {1, 1, 1.5f, 0.5f};
  Tensor x = randomTensor(DataType::Float32, {1, 2, 4, 6}, 13);
  std::vector<Tensor> out;
  ASSERT_TRUE(runOp(resizeNode(c), resizeInputs(c, x, true), 1, &out).isOk());
  expectNear(out[0], naiveResize(c, x), 1e-5, 1e-5);
}

// Float NCHW images take the CPU backend's separable kernel, not the reference: odd sizes, up and
// down, every interpolation, against the reference kernel's own output.
TEST(ResizeOp, CpuKernelRunsAndMatchesTheReference) {
  const Tensor x = randomTensor(DataType::Float32, {2, 3, 13, 17}, 11, -2, 2);
  std::vector<ResizeCase> cases(8);
  cases[0].coord = "asymmetric", cases[0].nearestMode = "floor", cases[0].scales = {1, 1, 2, 2};
  // Columns doubled, rows tripled or halved: the nearest 2x path writes rows straight through.
  cases[6].coord = "asymmetric", cases[6].nearestMode = "floor", cases[6].scales = {1, 1, 3, 2};
  cases[7].scales = {1, 1, 0.5f, 2};
  cases[1].mode = "linear", cases[1].scales = {1, 1, 1.7f, 2.3f};
  cases[2].mode = "linear", cases[2].coord = "align_corners", cases[2].sizes = {2, 3, 7, 30};
  cases[3].mode = "cubic", cases[3].scales = {1, 1, 1.5f, 0.6f};
  cases[4].mode = "linear", cases[4].antialias = true, cases[4].scales = {1, 1, 0.4f, 0.45f};
  cases[5].mode = "linear", cases[5].coord = "tf_crop_and_resize", cases[5].extrapolation = 9;
  cases[5].roi = {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f}, cases[5].sizes = {2, 3, 9, 11};
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    std::map<std::string, Tensor> feeds;
    auto model = oneNodeModel(resizeNode(cases[i]), resizeInputs(cases[i], x), 1, &feeds);
    std::shared_ptr<Interpreter> interp;
    ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
    std::unique_ptr<Session> session;
    ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
    std::vector<Tensor> y, ref;
    ASSERT_TRUE(session->run(feeds, &y).isOk());
    EXPECT_TRUE(session->stats().referenceOps.empty());
    ASSERT_TRUE(referenceOp(resizeNode(cases[i]), resizeInputs(cases[i], x), 1, &ref).isOk());
    expectNear(y[0], ref[0], 1e-5, 1e-5);
  }
}

// int8 / uint8 codes with integer_rounding = "half_up" (TFLite's int8 bilinear resize): the CPU
// kernel blends in float and rounds as the reference does in double; the power-of-two factors
// of upsampling layers keep every weight exact, so the codes must agree exactly.
TEST(ResizeOp, CpuKernelRoundsCodesHalfUp) {
  std::vector<ResizeCase> cases(4);
  cases[0].mode = "linear", cases[0].scales = {1, 1, 2, 2};
  cases[1].mode = "linear", cases[1].coord = "asymmetric", cases[1].scales = {1, 1, 4, 4};
  cases[2].mode = "linear", cases[2].coord = "align_corners", cases[2].sizes = {2, 3, 25, 33};
  cases[3].coord = "asymmetric", cases[3].nearestMode = "floor", cases[3].scales = {1, 1, 2, 2};
  uint32_t seed = 30;
  for (DataType dtype : {DataType::Int8, DataType::UInt8}) {
    const Tensor x = randomBytes(dtype, {2, 3, 13, 17}, seed++);
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(std::string(dataTypeName(dtype)) + " case " + std::to_string(i));
      Node node = resizeNode(cases[i]);
      node.setString("integer_rounding", "half_up");
      std::map<std::string, Tensor> feeds;
      auto model = oneNodeModel(node, resizeInputs(cases[i], x), 1, &feeds);
      std::shared_ptr<Interpreter> interp;
      ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
      ScheduleConfig schedule;
      schedule.threads = 2;
      std::unique_ptr<Session> session;
      ASSERT_TRUE(interp->createSession(schedule, BackendConfig(), &session).isOk());
      std::vector<Tensor> y, ref;
      ASSERT_TRUE(session->run(feeds, &y).isOk());
      EXPECT_TRUE(session->stats().referenceOps.empty());
      ASSERT_TRUE(referenceOp(node, resizeInputs(cases[i], x), 1, &ref).isOk());
      expectEqualValues(y[0], ref[0]);
    }
  }
  // The reference rounds half up: codes 0 and 1 blended half and half give 1, not 0.
  ResizeCase mid;
  mid.mode = "linear", mid.coord = "align_corners", mid.sizes = {1, 1, 1, 3};
  Node node = resizeNode(mid);
  node.setString("integer_rounding", "half_up");
  std::vector<Tensor> out;
  ASSERT_TRUE(referenceOp(node, resizeInputs(mid, makeTensor<int8_t>({1, 1, 1, 2}, {0, 1})), 1, &out).isOk());
  EXPECT_EQ(out[0].data<int8_t>()[1], 1);
  node.setString("integer_rounding", "half_even");
  EXPECT_FALSE(runOp(node, resizeInputs(mid, makeTensor<int8_t>({1, 1, 1, 2}, {0, 1})), 1, &out).isOk());
}

TEST(ResizeOp, BadAttributesAndInputsAreErrors) {
  Tensor x = randomTensor(DataType::Float32, {1, 1, 4, 4}, 14);
  auto fails = [&](const ResizeCase& c, std::vector<OpInput> inputs = {}) {
    std::vector<Tensor> out;
    if (inputs.empty()) inputs = resizeInputs(c, x);
    return !runOp(resizeNode(c), inputs, 1, &out).isOk();
  };
  ResizeCase ok;
  ok.scales = {1, 1, 2, 2};
  ResizeCase c = ok;
  c.mode = "bicubic";
  EXPECT_TRUE(fails(c));
  c = ok;
  c.coord = "tf_half_pixel_for_nn";
  EXPECT_TRUE(fails(c));
  c = ok;
  c.nearestMode = "round";
  EXPECT_TRUE(fails(c));
  c = ok;
  c.policy = "fit";
  EXPECT_TRUE(fails(c));
  c = ok;
  c.scales = {1, 1, 2};  // too few
  EXPECT_TRUE(fails(c));
  c = ok;
  c.scales = {1, 1, -2, 2};
  EXPECT_TRUE(fails(c));
  c = ok;
  c.axes = {2, 2, 3, 3};
  EXPECT_TRUE(fails(c));
  c = ok;
  c.coord = "tf_crop_and_resize";  // no roi
  EXPECT_TRUE(fails(c));
  EXPECT_TRUE(fails(ok, {in(x), absent(), absent(), absent()}));  // neither scales nor sizes
  EXPECT_TRUE(fails(ok, {in(x), absent(), constant(makeTensor<float>({4}, {1, 1, 2, 2})),
                         constant(makeTensor<int64_t>({4}, {1, 1, 8, 8}))}));  // both
  Node n = resizeNode(ok);
  n.setInt("antialias", 2);
  std::vector<Tensor> out;
  EXPECT_FALSE(runOp(n, resizeInputs(ok, x), 1, &out).isOk());
  ResizeCase boolInput = ok;
  EXPECT_FALSE(runOp(resizeNode(boolInput), resizeInputs(boolInput, Tensor(DataType::Bool, {1, 1, 4, 4})), 1, &out).isOk());
}

}  // namespace
}  // namespace osprey::test
