// ByteLookup (internal): the CPU execution against the reference kernel on random codes and
// tables of both byte types, both layouts of a 4-D input next to a convolution, and the errors
// for a table of the wrong size or type.
#include "op_test_util.h"

namespace osprey::test {
namespace {

TEST(ByteLookup, MatchesTheReferenceForEveryTypePair) {
  uint32_t seed = 1;
  for (DataType xType : {DataType::UInt8, DataType::Int8})
    for (DataType tableType : {DataType::UInt8, DataType::Int8})
      for (const Shape& shape : {Shape{0}, Shape{1}, Shape{257}, Shape{3, 70001}, Shape{2, 5, 7, 9}}) {
        SCOPED_TRACE(std::string(dataTypeName(xType)) + " -> " + dataTypeName(tableType) + " " + shapeToString(shape));
        Node node = makeNode(OpType::ByteLookup);
        const std::vector<OpInput> inputs = {in(randomBytes(xType, shape, seed++)),
                                             constant(randomBytes(tableType, {256}, seed++))};
        std::vector<Tensor> got, want;
        Status st = runOp(node, inputs, 1, &got, 2);
        ASSERT_TRUE(st) << st.message();
        st = referenceOp(node, inputs, 1, &want);
        ASSERT_TRUE(st) << st.message();
        expectEqualValues(got[0], want[0]);
        // Every code lands on its own entry: table[byte of x].
        const auto* x = static_cast<const uint8_t*>(inputs[0].value.data());
        const auto* table = static_cast<const uint8_t*>(inputs[1].value.data());
        const auto* y = static_cast<const uint8_t*>(got[0].data());
        for (int64_t i = 0; i < got[0].elements(); ++i) ASSERT_EQ(y[i], table[x[i]]) << i;
      }
}

TEST(ByteLookup, RejectsATableThatIsNot256Bytes) {
  Node node = makeNode(OpType::ByteLookup);
  std::vector<Tensor> out;
  EXPECT_FALSE(runOp(node, {in(randomBytes(DataType::UInt8, {4}, 1)), constant(randomBytes(DataType::UInt8, {255}, 2))}, 1,
                     &out));
  EXPECT_FALSE(runOp(node, {in(randomBytes(DataType::UInt8, {4}, 1)), constant(randomTensor(DataType::Float32, {256}, 2))},
                     1, &out));
  EXPECT_FALSE(runOp(node, {in(randomTensor(DataType::Float32, {4}, 1)), constant(randomBytes(DataType::UInt8, {256}, 2))},
                     1, &out));
}

}  // namespace
}  // namespace osprey::test
