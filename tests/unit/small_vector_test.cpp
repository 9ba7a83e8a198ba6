// SmallVector keeps its elements across the move between its inline storage and the heap.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/small_vector.h"

namespace osprey {
namespace {

TEST(SmallVector, ElementsSurviveGrowingPastAndShrinkingBelowTheInlineStorage) {
  SmallVector<int64_t, 4> v;
  for (int64_t i = 0; i < 3; ++i) v.push_back(i);
  v.resize(6);  // spills: 0 1 2 0 0 0
  EXPECT_EQ(v.size(), 6u);
  EXPECT_EQ(v[2], 2);
  EXPECT_EQ(v[5], 0);
  v.push_back(7);
  v.back() += 1;
  EXPECT_EQ(v[6], 8);
  v.resize(2);  // back inline
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1], 1);
  v.resize(4);  // new elements are zero
  EXPECT_EQ(v[3], 0);
  for (int64_t i = 0; i < 5; ++i) v.push_back(10 + i);
  EXPECT_EQ(v.size(), 9u);
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[8], 14);
}

}  // namespace
}  // namespace osprey
