#include <gtest/gtest.h>

#include <random>

#include "core/memory_planner.h"

namespace osprey {
namespace {

struct Life {
  std::shared_ptr<MemChunk> chunk;
  int begin, end;
};

// Every pair of chunks alive at the same time must occupy disjoint bytes.
void expectNoOverlap(const std::vector<Life>& lives) {
  for (size_t a = 0; a < lives.size(); ++a)
    for (size_t b = a + 1; b < lives.size(); ++b) {
      bool timeOverlap = lives[a].begin < lives[b].end && lives[b].begin < lives[a].end;
      if (!timeOverlap) continue;
      const MemChunk &x = *lives[a].chunk, &y = *lives[b].chunk;
      bool memOverlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      EXPECT_FALSE(memOverlap) << "chunks " << a << " and " << b << " overlap";
    }
}

TEST(MemoryPlanner, ChainReusesMemory) {
  MemoryPlanner p(64);
  // a -> b -> c -> d: only two tensors alive at a time.
  auto a = p.acquire(1000);
  auto b = p.acquire(1000);
  p.release(a);
  auto c = p.acquire(1000);
  p.release(b);
  auto d = p.acquire(1000);
  p.release(c);
  size_t peak = p.plan();
  EXPECT_EQ(peak, 2 * 1024u);
  EXPECT_EQ(p.sumBytes(), 4000u);
  EXPECT_NE(a->offset, b->offset);
  EXPECT_NE(b->offset, c->offset);
  EXPECT_NE(c->offset, d->offset);
}

TEST(MemoryPlanner, BestFitPlacesSmallChunkInHole) {
  MemoryPlanner p(1);
  auto big = p.acquire(100);
  auto small1 = p.acquire(10);
  p.release(big);
  auto small2 = p.acquire(30);  // fits where big was
  p.release(small1);
  p.release(small2);
  EXPECT_EQ(p.plan(), 110u);
  EXPECT_LT(small2->offset + 30, 111u);
}

TEST(MemoryPlanner, RandomLifetimesNeverOverlap) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 20; ++trial) {
    MemoryPlanner p(64);
    std::vector<Life> lives;
    std::vector<size_t> alive;
    int clock = 0;
    size_t maxLive = 0, live = 0;
    for (int step = 0; step < 200; ++step) {
      if (!alive.empty() && (gen() % 3 == 0)) {
        size_t k = gen() % alive.size();
        Life& l = lives[alive[k]];
        p.release(l.chunk);
        l.end = clock++;
        live -= (l.chunk->size + 63) / 64 * 64;
        alive.erase(alive.begin() + static_cast<long>(k));
      } else {
        size_t bytes = 1 + gen() % 5000;
        lives.push_back({p.acquire(bytes), clock++, 1 << 30});
        alive.push_back(lives.size() - 1);
        live += (bytes + 63) / 64 * 64;
        maxLive = std::max(maxLive, live);
      }
    }
    size_t peak = p.plan();
    expectNoOverlap(lives);
    EXPECT_GE(peak, maxLive);         // cannot beat the largest simultaneous need
    EXPECT_LE(peak, p.sumBytes() + lives.size() * 64);  // never worse than no reuse
  }
}

}  // namespace
}  // namespace osprey
