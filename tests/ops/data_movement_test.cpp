// Data-movement ops (Reshape family, Transpose, Concat, Split, Slice, Pad, Expand, Tile,
// Gather) against naive index arithmetic written here: each expected output element names
// the input element it comes from.
#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

#include "op_test_util.h"

namespace osprey::test {
namespace {

using Index = std::vector<int64_t>;

Index unravel(int64_t flat, const Shape& shape) {
  Index idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

int64_t ravel(const Index& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// The expected tensor: element i is input element source(index of i), or `fill` where
// source returns -1.
Tensor expectedFrom(const Tensor& input, const Shape& outShape, const std::function<int64_t(const Index&)>& source,
                    double fill = 0.0) {
  Tensor out(input.dtype(), outShape);
  const size_t elem = dataTypeSize(input.dtype());
  for (int64_t i = 0; i < out.elements(); ++i) {
    int64_t s = source(unravel(i, outShape));
    if (s < 0) {
      storeFromDouble(input.dtype(), out.data(), i, fill);
    } else {
      std::memcpy(static_cast<uint8_t*>(out.data()) + i * elem, static_cast<const uint8_t*>(input.data()) + s * elem, elem);
    }
  }
  return out;
}

// Same elements in the same order, as a different shape.
Tensor reshaped(const Tensor& x, const Shape& shape) {
  return expectedFrom(x, shape, [&](const Index& i) { return ravel(i, shape); });
}

void expectSame(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  ASSERT_EQ(std::memcmp(actual.data(), expected.data(), expected.bytes()), 0) << "shape " << shapeToString(actual.shape());
}

Tensor ints(const std::vector<int64_t>& v) { return makeTensor<int64_t>({static_cast<int64_t>(v.size())}, v); }

std::vector<Tensor> runN(const Node& node, const std::vector<OpInput>& inputs, int outputs) {
  std::vector<Tensor> out;
  Status st = runOp(node, inputs, outputs, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  out.resize(outputs);
  return out;
}

Status runStatus(const Node& node, const std::vector<OpInput>& inputs, int outputs = 1) {
  std::vector<Tensor> out;
  return runOp(node, inputs, outputs, &out);
}

// ---------------------------------------------------------------------------------------
// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout

TEST(ReshapeOp, ZeroCopiesAndMinusOneInfers) {
  Tensor x = randomTensor(DataType::Float32, {4, 3, 14}, 1);
  Node n = makeNode(OpType::Reshape);
  expectSame(run1(n, {in(x), constant(ints({0, -1, 2}))}), reshaped(x, {4, 21, 2}));
  expectSame(run1(n, {in(x), constant(ints({-1}))}), reshaped(x, {168}));
  // The shape as a runtime input: the session plans once the value is known.
  expectSame(run1(n, {in(x), in(ints({7, 0, 8}))}), reshaped(x, {7, 3, 8}));
}

TEST(ReshapeOp, AllowZeroKeepsZeros) {
  Tensor x(DataType::Int64, {0, 5});
  Node n = makeNode(OpType::Reshape);
  n.setInt("allowzero", 1);
  expectSame(run1(n, {in(x), constant(ints({5, 0, 3}))}), Tensor(DataType::Int64, {5, 0, 3}));
  Tensor y = randomTensor(DataType::Int8, {2, 6}, 2, -50, 50);
  expectSame(run1(n, {in(y), constant(ints({3, 4}))}), reshaped(y, {3, 4}));
}

TEST(ReshapeOp, BadShapesAreErrors) {
  Tensor x = randomTensor(DataType::Float32, {4, 6}, 3);
  Node n = makeNode(OpType::Reshape);
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({5, -1}))}).isOk());      // 24 not divisible by 5
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({-1, -1}))}).isOk());     // two -1
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({7, 3}))}).isOk());       // wrong count
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({2, -3, 4}))}).isOk());   // negative
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({4, 6, 0}))}).isOk());    // 0 copies a missing dim
  n.setInt("allowzero", 1);
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0, -1}))}).isOk());      // 0 and -1 together
}

TEST(FlattenOp, EveryAxis) {
  Tensor x = randomTensor(DataType::Float16, {3, 5, 7, 2}, 4);
  for (int64_t axis = -4; axis <= 4; ++axis) {
    Node n = makeNode(OpType::Flatten);
    n.setInt("axis", axis);
    const int64_t a = axis < 0 ? axis + 4 : axis;
    int64_t outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= x.shape()[d];
    expectSame(run1(n, {in(x)}), reshaped(x, {outer, x.elements() / outer}));
  }
  Node dflt = makeNode(OpType::Flatten);
  expectSame(run1(dflt, {in(x)}), reshaped(x, {3, 70}));
  Node bad = makeNode(OpType::Flatten);
  bad.setInt("axis", 5);
  EXPECT_FALSE(runStatus(bad, {in(x)}).isOk());
}

TEST(SqueezeOp, AxesAndDefault) {
  Tensor x = randomTensor(DataType::Float32, {1, 13, 1, 7, 1}, 5);
  Node n = makeNode(OpType::Squeeze);
  expectSame(run1(n, {in(x), constant(ints({0, -1}))}), reshaped(x, {13, 1, 7}));
  expectSame(run1(n, {in(x)}), reshaped(x, {13, 7}));
  expectSame(run1(n, {in(x), absent()}), reshaped(x, {13, 7}));
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({1}))}).isOk());   // size 13
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({5}))}).isOk());   // out of range
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0, -5}))}).isOk());  // repeated
}

TEST(UnsqueezeOp, AxesInAnyOrder) {
  Tensor x = randomTensor(DataType::Int32, {13, 7}, 6, -100, 100);
  Node n = makeNode(OpType::Unsqueeze);
  expectSame(run1(n, {in(x), constant(ints({0}))}), reshaped(x, {1, 13, 7}));
  expectSame(run1(n, {in(x), constant(ints({-1}))}), reshaped(x, {13, 7, 1}));
  expectSame(run1(n, {in(x), constant(ints({3, 1}))}), reshaped(x, {13, 1, 7, 1}));
  expectSame(run1(n, {in(x), constant(ints({0, 4, 2}))}), reshaped(x, {1, 13, 1, 7, 1}));
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({1, 1}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({3}))}).isOk());
}

TEST(IdentityOp, CopiesAnyDtype) {
  for (DataType dt : {DataType::Float32, DataType::UInt8, DataType::Int64, DataType::BFloat16, DataType::Float64}) {
    Tensor x = randomTensor(dt, {13, 7}, 7, 0, 100);
    expectSame(run1(makeNode(OpType::Identity), {in(x)}), x);
  }
}

TEST(DropoutOp, InferencePassesThroughWithTrueMask) {
  Tensor x = randomTensor(DataType::Float32, {5, 127}, 8);
  Node n = makeNode(OpType::Dropout);
  Tensor mask(DataType::Bool, {5, 127});
  for (int64_t i = 0; i < mask.elements(); ++i) mask.data<bool>()[i] = true;
  auto out = runN(n, {in(x)}, 2);
  expectSame(out[0], x);
  expectSame(out[1], mask);
  auto withRatio = runN(n, {in(x), constant(makeTensor<float>({}, {0.3f})), constant(makeTensor<bool>({}, {false}))}, 2);
  expectSame(withRatio[0], x);
  expectSame(withRatio[1], mask);
  expectSame(run1(n, {in(x)}), x);  // mask not asked for
  // Training mode with ratio 0 drops nothing; with a nonzero ratio it is unsupported.
  expectSame(run1(n, {in(x), constant(makeTensor<float>({}, {0.f})), constant(makeTensor<bool>({}, {true}))}), x);
  EXPECT_FALSE(runStatus(n, {in(x), constant(makeTensor<float>({}, {0.5f})), constant(makeTensor<bool>({}, {true}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), absent(), constant(makeTensor<bool>({}, {true}))}).isOk());
}

// ---------------------------------------------------------------------------------------
// Transpose

Tensor naiveTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = x.shape()[perm[i]];
  return expectedFrom(x, out, [&](const Index& o) {
    Index src(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) src[perm[i]] = o[i];
    return ravel(src, x.shape());
  });
}

TEST(TransposeOp, EveryPermutationOfRank4) {
  Tensor x = randomTensor(DataType::Float32, {3, 5, 7, 2}, 9);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    Node n = makeNode(OpType::Transpose);
    n.setInts("perm", perm);
    expectSame(run1(n, {in(x)}), naiveTranspose(x, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(TransposeOp, DefaultReversesAndDtypes) {
  for (DataType dt : {DataType::Float16, DataType::Int64, DataType::UInt8, DataType::Bool}) {
    Tensor x = randomTensor(dt, {13, 1, 7}, 10, 0, 2);
    expectSame(run1(makeNode(OpType::Transpose), {in(x)}), naiveTranspose(x, {2, 1, 0}));
  }
  Tensor big = randomTensor(DataType::Float32, {2, 3, 2, 3, 5}, 11);
  Node n = makeNode(OpType::Transpose);
  n.setInts("perm", {4, 0, 3, 1, 2});
  expectSame(run1(n, {in(big)}), naiveTranspose(big, {4, 0, 3, 1, 2}));
}

TEST(TransposeOp, BadPermIsError) {
  Tensor x = randomTensor(DataType::Float32, {3, 5, 7}, 12);
  for (std::vector<int64_t> perm : std::vector<std::vector<int64_t>>{{0, 1}, {0, 1, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    Node n = makeNode(OpType::Transpose);
    n.setInts("perm", perm);
    EXPECT_FALSE(runStatus(n, {in(x)}).isOk()) << shapeToString(perm);
  }
}

// Lowering is what runs: the session reports the op as lowered to Raster.
TEST(TransposeOp, LowersToRaster) {
  auto model = std::make_shared<Model>();
  Graph& g = model->graph;
  TensorInfo x;
  x.name = "x";
  x.dtype = DataType::Float32;
  x.shape = {13, 7};
  int xi = g.addTensor(x);
  TensorInfo y;
  y.name = "y";
  int yi = g.addTensor(y);
  g.inputs = {xi};
  g.outputs = {yi};
  Node n = makeNode(OpType::Transpose);
  n.name = "t";
  n.inputs = {xi};
  n.outputs = {yi};
  g.nodes.push_back(n);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  std::unique_ptr<Session> session;
  ASSERT_TRUE(interp->createSession(ScheduleConfig(), BackendConfig(), &session).isOk());
  Tensor data = randomTensor(DataType::Float32, {13, 7}, 13);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->run({{"x", data}}, &out).isOk());
  EXPECT_EQ(session->stats().loweredOps, 1);
  expectSame(out[0], naiveTranspose(data, {1, 0}));
}

// ---------------------------------------------------------------------------------------
// Concat and Split

TEST(ConcatOp, NegativeAxisAndEmptyInputs) {
  Tensor a = randomTensor(DataType::Float32, {3, 2, 5}, 14);
  Tensor b = randomTensor(DataType::Float32, {3, 7, 5}, 15);
  Tensor e(DataType::Float32, {3, 0, 5});
  Tensor c = randomTensor(DataType::Float32, {3, 1, 5}, 16);
  Node n = makeNode(OpType::Concat);
  n.setInt("axis", -2);
  const std::vector<const Tensor*> parts = {&a, &b, &e, &c};
  Shape outShape = {3, 10, 5};
  Tensor expected(DataType::Float32, outShape);
  for (int64_t i = 0; i < expected.elements(); ++i) {
    Index o = unravel(i, outShape);
    int64_t k = o[1];
    for (const Tensor* p : parts) {
      if (k < p->shape()[1]) {
        expected.data<float>()[i] = p->data<float>()[ravel({o[0], k, o[2]}, p->shape())];
        break;
      }
      k -= p->shape()[1];
    }
  }
  expectSame(run1(n, {in(a), in(b), in(e), constant(c)}), expected);
}

TEST(ConcatOp, EachAxisAndErrors) {
  Tensor a = randomTensor(DataType::Int64, {2, 3}, 17, -9, 9);
  Tensor b = randomTensor(DataType::Int64, {2, 3}, 18, -9, 9);
  for (int64_t axis : {0, 1}) {
    Node n = makeNode(OpType::Concat);
    n.setInt("axis", axis);
    Shape s = {2, 3};
    s[axis] *= 2;
    Tensor got = run1(n, {in(a), in(b)});
    ASSERT_EQ(got.shape(), s);
    for (int64_t i = 0; i < got.elements(); ++i) {
      Index o = unravel(i, s);
      const Tensor& src = o[axis] < a.shape()[axis] ? a : b;
      if (o[axis] >= a.shape()[axis]) o[axis] -= a.shape()[axis];
      EXPECT_EQ(got.data<int64_t>()[i], src.data<int64_t>()[ravel(o, src.shape())]);
    }
  }
  Node n = makeNode(OpType::Concat);
  n.setInt("axis", 0);
  EXPECT_FALSE(runStatus(n, {in(a), in(randomTensor(DataType::Int64, {2, 4}, 19))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(a), in(randomTensor(DataType::Int32, {2, 3}, 19))}).isOk());
  n.setInt("axis", 2);
  EXPECT_FALSE(runStatus(n, {in(a), in(b)}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Concat), {in(a), in(b)}).isOk());  // axis is required
}

// Split's expected outputs: consecutive slices of `sizes` along axis.
void expectSplit(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes, const std::vector<Tensor>& got) {
  ASSERT_EQ(got.size(), sizes.size());
  int64_t start = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Shape s = x.shape();
    s[axis] = sizes[k];
    expectSame(got[k], expectedFrom(x, s, [&](const Index& o) {
      Index src = o;
      src[axis] += start;
      return ravel(src, x.shape());
    }));
    start += sizes[k];
  }
}

TEST(SplitOp, SizesInputNumOutputsAndEqualParts) {
  Tensor x = randomTensor(DataType::Float32, {3, 13, 5}, 20);
  Node n = makeNode(OpType::Split);
  n.setInt("axis", -2);
  expectSplit(x, 1, {2, 5, 6}, runN(n, {in(x), constant(ints({2, 5, 6}))}, 3));
  expectSplit(x, 1, {0, 13}, runN(n, {in(x), constant(ints({0, 13}))}, 2));
  Node byCount = makeNode(OpType::Split);
  byCount.setInt("axis", 1);
  byCount.setInt("num_outputs", 3);
  expectSplit(x, 1, {5, 5, 3}, runN(byCount, {in(x)}, 3));  // ceil(13/3) = 5, last smaller
  Node byOutputs = makeNode(OpType::Split);                  // axis 0, equal parts by output count
  Tensor y = randomTensor(DataType::UInt8, {12, 7}, 21, 0, 200);
  expectSplit(y, 0, {3, 3, 3, 3}, runN(byOutputs, {in(y)}, 4));
  expectSplit(y, 0, {12}, runN(byOutputs, {in(y)}, 1));
}

TEST(SplitOp, BadSplitsAreErrors) {
  Tensor x = randomTensor(DataType::Float32, {5, 4}, 22);
  Node n = makeNode(OpType::Split);
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({2, 2}))}, 2).isOk());     // sum 4 != 5
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({2, 3}))}, 3).isOk());     // 2 sizes, 3 outputs
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({6, -1}))}, 2).isOk());    // negative
  EXPECT_FALSE(runStatus(n, {in(x)}, 4).isOk());                             // 2,2,2,-1
  Node both = makeNode(OpType::Split);
  both.setInt("num_outputs", 2);
  EXPECT_FALSE(runStatus(both, {in(x), constant(ints({2, 3}))}, 2).isOk());
  EXPECT_FALSE(runStatus(both, {in(x)}, 3).isOk());  // num_outputs disagrees with the outputs
  Node axis = makeNode(OpType::Split);
  axis.setInt("axis", 2);
  EXPECT_FALSE(runStatus(axis, {in(x)}, 2).isOk());
}

// ---------------------------------------------------------------------------------------
// Slice

// The indices a Python slice start:end:step picks from range(dim), by walking the range.
std::vector<int64_t> pythonSlice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto fix = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -dim ? lo : v + dim;  // written without adding dim to INT64_MIN
    return v < lo ? lo : (v > hi ? hi : v);
  };
  std::vector<int64_t> picked;
  if (step > 0) {
    for (int64_t i = fix(start, 0, dim); i < fix(end, 0, dim); i += step) picked.push_back(i);
  } else {
    for (int64_t i = fix(start, -1, dim - 1); i > fix(end, -1, dim - 1); i += step) picked.push_back(i);
  }
  return picked;
}

Tensor naiveSlice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                  const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  std::vector<std::vector<int64_t>> picks(rank);
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < x.shape()[d]; ++i) picks[d].push_back(i);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    picks[a] = pythonSlice(x.shape()[a], starts[k], ends[k], steps[k]);
  }
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d) out[d] = static_cast<int64_t>(picks[d].size());
  return expectedFrom(x, out, [&](const Index& o) {
    Index src(rank);
    for (int64_t d = 0; d < rank; ++d) src[d] = picks[d][o[d]];
    return ravel(src, x.shape());
  });
}

TEST(SliceOp, StepsAxesAndClamping) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  Tensor x = randomTensor(DataType::Float32, {7, 13, 5}, 23);
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {
      {{1, 2}, {6, 11}, {0, 1}, {1, 3}},
      {{-1}, {kMin}, {1}, {-1}},          // reverse the whole axis
      {{kMax}, {-100}, {-2}, {-4}},       // start clamps to the last element
      {{-3, 0}, {kMax, 100}, {-1, 0}, {1, 2}},
      {{5}, {2}, {0}, {1}},               // empty
      {{0}, {13}, {1}, {kMax}},           // one element, huge step
      {{12}, {-14}, {1}, {kMin}},         // one element, huge negative step
      {{-20}, {20}, {2}, {2}},
      {{3, 4, 1}, {0, 0, 5}, {1, 2, 0}, {-2, -1, 3}},
  };
  for (const Case& c : cases) {
    Node n = makeNode(OpType::Slice);
    std::vector<Tensor> got;
    ASSERT_TRUE(runOp(n, {in(x), constant(ints(c.starts)), constant(ints(c.ends)), constant(ints(c.axes)), constant(ints(c.steps))},
                      1, &got)
                    .isOk())
        << shapeToString(c.starts);
    expectSame(got[0], naiveSlice(x, c.starts, c.ends, c.axes, c.steps));
  }
}

TEST(SliceOp, DefaultAxesStepsAndInt32Inputs) {
  Tensor x = randomTensor(DataType::Int16, {6, 9}, 24, -99, 99);
  Node n = makeNode(OpType::Slice);
  expectSame(run1(n, {in(x), constant(ints({1, -7})), constant(ints({5, -1}))}),
             naiveSlice(x, {1, -7}, {5, -1}, {0, 1}, {1, 1}));
  expectSame(run1(n, {in(x), constant(ints({2})), constant(ints({4}))}), naiveSlice(x, {2}, {4}, {0}, {1}));
  auto i32 = [](std::vector<int32_t> v) { return makeTensor<int32_t>({static_cast<int64_t>(v.size())}, v); };
  expectSame(run1(n, {in(x), constant(i32({8})), constant(i32({0})), constant(i32({1})), constant(i32({-3}))}),
             naiveSlice(x, {8}, {0}, {1}, {-3}));
  // starts known only at run time.
  expectSame(run1(n, {in(x), in(ints({4})), constant(ints({0})), absent(), constant(ints({-1}))}),
             naiveSlice(x, {4}, {0}, {0}, {-1}));
}

TEST(SliceOp, BadInputsAreErrors) {
  Tensor x = randomTensor(DataType::Float32, {6, 9}, 25);
  Node n = makeNode(OpType::Slice);
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0})), constant(ints({3})), constant(ints({0})), constant(ints({0}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0, 1})), constant(ints({3}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0})), constant(ints({3})), constant(ints({2}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0, 0})), constant(ints({3, 3})), constant(ints({1, -1}))}).isOk());
}

// ---------------------------------------------------------------------------------------
// Pad

// The input coordinate for padded coordinate i (may lie outside [0, dim)), found by walking
// reflections / wraps one at a time; -1 for the constant.
int64_t naivePadSource(const std::string& mode, int64_t i, int64_t dim) {
  if (i >= 0 && i < dim) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : dim - 1;
  if (mode == "wrap") {
    while (i < 0) i += dim;
    while (i >= dim) i -= dim;
    return i;
  }
  if (dim == 1) return 0;
  while (i < 0 || i >= dim) i = i < 0 ? -i : 2 * (dim - 1) - i;  // reflect
  return i;
}

Tensor naivePad(const Tensor& x, const std::string& mode, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                double value) {
  Shape out = x.shape();
  for (size_t d = 0; d < out.size(); ++d) out[d] += begin[d] + end[d];
  return expectedFrom(
      x, out,
      [&](const Index& o) {
        Index src(o.size());
        for (size_t d = 0; d < o.size(); ++d) {
          src[d] = naivePadSource(mode, o[d] - begin[d], x.shape()[d]);
          if (src[d] < 0) return int64_t{-1};
        }
        return ravel(src, x.shape());
      },
      value);
}

TEST(PadOp, EveryModeWithLargePads) {
  Tensor x = randomTensor(DataType::Float32, {3, 4, 5}, 26);
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    Node n = makeNode(OpType::Pad);
    n.setString("mode", mode);
    const std::vector<int64_t> begin = {1, 9, 0}, end = {2, 7, 3};
    Tensor got = run1(n, {in(x), constant(ints({1, 9, 0, 2, 7, 3})), constant(makeTensor<float>({}, {2.5f}))});
    expectSame(got, naivePad(x, mode, begin, end, 2.5));
  }
}

TEST(PadOp, NegativePadsCrop) {
  Tensor x = randomTensor(DataType::Int32, {6, 7}, 27, -99, 99);
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    Node n = makeNode(OpType::Pad);
    n.setString("mode", mode);
    Tensor got = run1(n, {in(x), constant(ints({-2, 3, 1, -4})), constant(makeTensor<int32_t>({1}, {-7}))});
    expectSame(got, naivePad(x, mode, {-2, 3}, {1, -4}, -7));
  }
  Node n = makeNode(OpType::Pad);
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({-4, 0, -3, 0}))}).isOk());  // 6 - 7 < 0
}

TEST(PadOp, AxesInputAndDefaultConstant) {
  Tensor x = randomTensor(DataType::Float16, {2, 3, 5, 4}, 28);
  Node n = makeNode(OpType::Pad);
  // Pads only the last two axes, named negatively; constant_value absent means 0.
  Tensor got = run1(n, {in(x), constant(ints({1, 2, 3, 0})), absent(), constant(ints({-2, -1}))});
  expectSame(got, naivePad(x, "constant", {0, 0, 1, 2}, {0, 0, 3, 0}, 0.0));
  n.setString("mode", "edge");
  expectSame(run1(n, {in(x), constant(ints({2, 1})), absent(), constant(ints({1}))}),
             naivePad(x, "edge", {0, 2, 0, 0}, {0, 1, 0, 0}, 0.0));
}

TEST(PadOp, ReferenceKernelWhenConstantArrivesAtRunTime) {
  // constant_value as a runtime input: the lowering declines and the kernel runs.
  Tensor x = randomTensor(DataType::Int64, {5, 3}, 29, -99, 99);
  Node n = makeNode(OpType::Pad);
  Tensor got = run1(n, {in(x), constant(ints({1, 2, 3, 1})), in(makeTensor<int64_t>({}, {-12345678912345LL}))});
  Tensor expected = naivePad(x, "constant", {1, 2}, {3, 1}, 0.0);
  for (int64_t i = 0; i < expected.elements(); ++i) {
    Index o = unravel(i, expected.shape());
    if (o[0] < 1 || o[0] >= 6 || o[1] < 2 || o[1] >= 5) expected.data<int64_t>()[i] = -12345678912345LL;
  }
  expectSame(got, expected);
  // A 64-bit value a double cannot hold also goes to the kernel, exactly.
  const int64_t big = (int64_t{1} << 60) + 1;
  Tensor g2 = run1(n, {in(x), constant(ints({0, 0, 0, 1})), constant(makeTensor<int64_t>({}, {big}))});
  EXPECT_EQ(g2.data<int64_t>()[3], big);
}

TEST(PadOp, BadInputsAreErrors) {
  Tensor x = randomTensor(DataType::Float32, {3, 4}, 30);
  Node n = makeNode(OpType::Pad);
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({1, 1, 1}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({1, 1})), absent(), constant(ints({2}))}).isOk());
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0, 0, 0, 0})), constant(makeTensor<int32_t>({}, {1}))}).isOk());
  n.setString("mode", "mirror");
  EXPECT_FALSE(runStatus(n, {in(x), constant(ints({0, 0, 0, 0}))}).isOk());
  Node edge = makeNode(OpType::Pad);
  edge.setString("mode", "edge");
  EXPECT_FALSE(runStatus(edge, {in(Tensor(DataType::Float32, {0, 4})), constant(ints({1, 0, 0, 0}))}).isOk());
}

// ---------------------------------------------------------------------------------------
// Expand and Tile

TEST(ExpandOp, BidirectionalBroadcast) {
  Tensor x = randomTensor(DataType::Float32, {3, 1, 5}, 31);
  struct Case {
    std::vector<int64_t> shape;
    Shape out;
  };
  for (const Case& c : std::vector<Case>{{{2, 1, 4, 1}, {2, 3, 4, 5}}, {{1, 1}, {3, 1, 5}}, {{3, 0, 5}, {3, 0, 5}}}) {
    Tensor got = run1(makeNode(OpType::Expand), {in(x), constant(ints(c.shape))});
    expectSame(got, expectedFrom(x, c.out, [&](const Index& o) {
      Index src(3);
      for (size_t d = 0; d < 3; ++d) src[d] = x.shape()[d] == 1 ? 0 : o[o.size() - 3 + d];
      return ravel(src, x.shape());
    }));
  }
  Tensor row = randomTensor(DataType::UInt16, {7}, 32, 0, 999);
  expectSame(run1(makeNode(OpType::Expand), {in(row), constant(ints({4, 1}))}),
             expectedFrom(row, {4, 7}, [](const Index& o) { return o[1]; }));
  EXPECT_FALSE(runStatus(makeNode(OpType::Expand), {in(x), constant(ints({7}))}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Expand), {in(x), constant(ints({-1, 5}))}).isOk());
}

TEST(TileOp, RepeatsEachAxis) {
  Tensor x = randomTensor(DataType::Float64, {2, 3, 5}, 33);
  for (std::vector<int64_t> repeats : std::vector<std::vector<int64_t>>{{2, 1, 3}, {1, 1, 1}, {3, 2, 2}, {1, 0, 2}}) {
    Shape out = x.shape();
    for (size_t d = 0; d < 3; ++d) out[d] *= repeats[d];
    Tensor got = run1(makeNode(OpType::Tile), {in(x), constant(ints(repeats))});
    expectSame(got, expectedFrom(x, out, [&](const Index& o) {
      Index src(3);
      for (size_t d = 0; d < 3; ++d) src[d] = o[d] % x.shape()[d];
      return ravel(src, x.shape());
    }));
  }
  EXPECT_FALSE(runStatus(makeNode(OpType::Tile), {in(x), constant(ints({2, 2}))}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Tile), {in(x), constant(ints({1, -1, 1}))}).isOk());
}

// ---------------------------------------------------------------------------------------
// Gather

Tensor naiveGather(const Tensor& data, const std::vector<int64_t>& indices, const Shape& indicesShape, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(data.shape().size());
  if (axis < 0) axis += rank;
  Shape out(data.shape().begin(), data.shape().begin() + axis);
  out.insert(out.end(), indicesShape.begin(), indicesShape.end());
  out.insert(out.end(), data.shape().begin() + axis + 1, data.shape().end());
  const int64_t q = static_cast<int64_t>(indicesShape.size());
  return expectedFrom(data, out, [&](const Index& o) {
    Index src;
    for (int64_t d = 0; d < axis; ++d) src.push_back(o[d]);
    Index which(o.begin() + axis, o.begin() + axis + q);
    int64_t idx = indices[ravel(which, indicesShape)];
    src.push_back(idx < 0 ? idx + data.shape()[axis] : idx);
    for (int64_t d = axis + q; d < static_cast<int64_t>(o.size()); ++d) src.push_back(o[d]);
    return ravel(src, data.shape());
  });
}

TEST(GatherOp, AxesAndNegativeIndices) {
  Tensor data = randomTensor(DataType::Float32, {5, 7, 3}, 34);
  const std::vector<int64_t> idx = {0, -1, 3, 3, -7, 6};
  for (int64_t axis : {1, -2}) {
    Node n = makeNode(OpType::Gather);
    n.setInt("axis", axis);
    Tensor indices = makeTensor<int64_t>({2, 3}, idx);
    expectSame(run1(n, {in(data), in(indices)}), naiveGather(data, idx, {2, 3}, axis));       // kernel
    expectSame(run1(n, {in(data), constant(indices)}), naiveGather(data, idx, {2, 3}, axis));  // lowered
  }
  Node n = makeNode(OpType::Gather);  // axis 0, int32 indices, scalar index
  const std::vector<int64_t> idx0 = {4, -5, 2};
  Tensor i32 = makeTensor<int32_t>({3}, {4, -5, 2});
  expectSame(run1(n, {in(data), in(i32)}), naiveGather(data, idx0, {3}, 0));
  expectSame(run1(n, {in(data), in(makeTensor<int64_t>({}, {-2}))}), naiveGather(data, {-2}, {}, 0));
  n.setInt("axis", 2);
  Tensor bytes = randomTensor(DataType::UInt8, {5, 7, 3}, 35, 0, 255);
  expectSame(run1(n, {in(bytes), constant(makeTensor<int64_t>({}, {2}))}), naiveGather(bytes, {2}, {}, 2));
}

TEST(GatherOp, OutOfRangeIndexIsError) {
  Tensor data = randomTensor(DataType::Float32, {5, 7}, 36);
  Node n = makeNode(OpType::Gather);
  for (int64_t bad : {5, -6, 1000000}) {
    Tensor indices = makeTensor<int64_t>({2}, {1, bad});
    Status runtime = runStatus(n, {in(data), in(indices)});
    EXPECT_FALSE(runtime.isOk());
    EXPECT_NE(runtime.message().find(std::to_string(bad)), std::string::npos) << runtime.message();
    EXPECT_FALSE(runStatus(n, {in(data), constant(indices)}).isOk());
  }
  n.setInt("axis", 2);
  EXPECT_FALSE(runStatus(n, {in(data), in(makeTensor<int64_t>({1}, {0}))}).isOk());
  EXPECT_FALSE(runStatus(makeNode(OpType::Gather), {in(data), in(makeTensor<float>({1}, {0.f}))}).isOk());
}

}  // namespace
}  // namespace osprey::test
