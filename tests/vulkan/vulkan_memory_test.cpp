// The pool that STATIC tensors (weights) take their device memory from: best-fit ranges of a few
// large blocks, merged again when given back, a block freed once all of it came back.
#include <algorithm>
#include <vector>

#include "backends/vulkan/vk_memory.h"
#include "vulkan_test_util.h"

namespace osprey::test {
namespace {

using vulkan::StaticPool;
using vulkan::VulkanRuntime;

std::unique_ptr<VulkanRuntime> makeRuntime() {
  vulkan::RuntimeOptions options;
  options.device = testVulkanOptions().device;
  std::unique_ptr<VulkanRuntime> rt;
  Status st = VulkanRuntime::create(options, &rt);
  EXPECT_TRUE(st) << st.message();
  return rt;
}

TEST(VulkanStaticPool, BestFitRangesInOneBlock) {
  OSPREY_REQUIRE_VULKAN();
  auto rt = makeRuntime();
  ASSERT_TRUE(rt);
  StaticPool& pool = *rt->staticPool();
  std::vector<StaticPool::Range> r(4);
  const size_t sizes[] = {1000, 3000, 1, 70};
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.acquire(sizes[i], "weight", &r[i]));
  EXPECT_EQ(pool.blocks(), 1);
  std::vector<StaticPool::Range> sorted = r;
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    EXPECT_EQ(sorted[i].buffer, r[0].buffer);
    EXPECT_EQ(sorted[i].offset % rt->facts().minStorageBufferOffsetAlignment, 0u);
    if (i + 1 < sorted.size()) {
      EXPECT_LE(sorted[i].offset + sorted[i].bytes, sorted[i + 1].offset);
    }
  }
  // The 3000-byte range comes back; a 2000-byte tensor takes it, not the block's large tail.
  const size_t freed = r[1].offset;
  pool.release(r[1]);
  StaticPool::Range again;
  ASSERT_TRUE(pool.acquire(2000, "again", &again));
  EXPECT_EQ(again.offset, freed);
  // Neighbours merge: after the first two ranges come back, 3500 bytes fit where they were.
  pool.release(again);
  pool.release(r[0]);
  StaticPool::Range merged;
  ASSERT_TRUE(pool.acquire(3500, "merged", &merged));
  EXPECT_EQ(merged.offset, std::min(r[0].offset, freed));
  pool.release(merged);
  pool.release(r[2]);
  pool.release(r[3]);
  EXPECT_EQ(pool.blocks(), 0);  // everything came back: the block is freed
}

TEST(VulkanStaticPool, LargeTensorsGetBlocksOfTheirOwn) {
  OSPREY_REQUIRE_VULKAN();
  auto rt = makeRuntime();
  ASSERT_TRUE(rt);
  StaticPool& pool = *rt->staticPool();
  StaticPool::Range small, large;
  ASSERT_TRUE(pool.acquire(256, "small", &small));
  ASSERT_TRUE(pool.acquire(StaticPool::kFirstBlock, "large", &large));
  EXPECT_EQ(pool.blocks(), 2);
  EXPECT_NE(large.buffer, small.buffer);
  EXPECT_EQ(large.offset, 0u);
  pool.release(large);
  EXPECT_EQ(pool.blocks(), 1);
  // Many weights share few blocks (each block doubles, to kLargestBlock).
  std::vector<StaticPool::Range> many(600);
  for (auto& m : many) ASSERT_TRUE(pool.acquire(40000, "many", &m));
  EXPECT_LE(pool.blocks(), 4);
  for (auto& m : many) pool.release(m);
  pool.release(small);
  EXPECT_EQ(pool.blocks(), 0);
  EXPECT_EQ(pool.heldBytes(), 0u);
}

// A weight's range given back after the runtime ended is ignored, not a use of freed memory.
TEST(VulkanStaticPool, OutlivesItsRuntime) {
  OSPREY_REQUIRE_VULKAN();
  auto rt = makeRuntime();
  ASSERT_TRUE(rt);
  std::shared_ptr<StaticPool> pool = rt->staticPool();
  StaticPool::Range r;
  ASSERT_TRUE(pool->acquire(64, "w", &r));
  rt.reset();
  EXPECT_EQ(pool->blocks(), 0);
  pool->release(r);
}

}  // namespace
}  // namespace osprey::test
