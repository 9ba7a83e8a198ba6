// BackendConfig::Memory::Low: a session returns its activation arena's pages after each run and,
// for a model file mapped by LoadOptions::mapFile, the weights' pages once its plan has packed
// them. Outputs stay bit-identical to a Normal session's through new shapes (which plan again
// and read the weights back from the file) and repeated runs.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <cstring>
#include <string>

#include "../ops/op_test_util.h"
#include "core/files.h"
#include "graph_builder.h"
#include "osprey/osprey.h"
#include "runtime/model_io.h"

namespace osprey::test {
namespace {

// Conv (packed), Relu, MatMul with 8 MiB of packed weights, and an Add of a constant that the
// run reads from the model as it is.
std::string writeTestModel() {
  GraphBuilder b;
  int x = b.input("x", {-1, 3, -1, 1024});
  x = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {8, 3, 3, 3}, 1))});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  x = b.op(OpType::Relu, {x});
  x = b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {1024, 2048}, 2))});
  b.output(b.op(OpType::Add, {x, b.weights(randomTensor(DataType::Float32, {2048}, 3))}));
  Model model;
  model.graph = b.g;
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(writeModel(model, &bytes).isOk());
  const std::string path = ::testing::TempDir() + "memory_low_" + std::to_string(getpid()) + ".osp";
  EXPECT_TRUE(writeFile(path, bytes).isOk());
  // On disk before it is mapped: pages still waiting to be written back stay mapped.
  const int fd = open(path.c_str(), O_RDONLY);
  EXPECT_EQ(fsync(fd), 0);
  close(fd);
  return path;
}

std::unique_ptr<Session> sessionOf(const Interpreter& interp, BackendConfig::Memory memory) {
  ScheduleConfig schedule;
  schedule.threads = 2;
  BackendConfig config;
  config.memory = memory;
  config.planCacheSize = 0;  // every new shape plans again, packing from the file's pages
  std::unique_ptr<Session> session;
  EXPECT_TRUE(interp.createSession(schedule, config, &session).isOk());
  return session;
}

// Pages of the mapping in this process's memory (its Rss in /proc/self/smaps; mincore would
// report the page cache instead).
size_t residentPages(const MappedFile& file) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t start = reinterpret_cast<uintptr_t>(file.data());
  std::string line;
  bool inMapping = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inMapping = lo == start;
    } else if (inMapping && line.rfind("Rss:", 0) == 0) {
      return std::stoul(line.substr(4)) * 1024 / static_cast<size_t>(sysconf(_SC_PAGESIZE));
    }
  }
  return SIZE_MAX;
}

TEST(MemoryLow, MappedWeightsGoBackAndOutputsStayTheSame) {
  const std::string path = writeTestModel();
  std::shared_ptr<Interpreter> read, mapped;
  ASSERT_TRUE(Interpreter::fromFile(path, &read).isOk());
  LoadOptions load;
  load.mapFile = true;
  ASSERT_TRUE(Interpreter::fromFile(path, load, &mapped).isOk());
  ASSERT_TRUE(mapped->model().mapping);
  EXPECT_FALSE(read->model().mapping);
  auto normal = sessionOf(*read, BackendConfig::Memory::Normal);
  auto low = sessionOf(*mapped, BackendConfig::Memory::Low);
  const MappedFile& file = *mapped->model().mapping;
  const size_t pages = (file.size() + static_cast<size_t>(sysconf(_SC_PAGESIZE)) - 1) / static_cast<size_t>(sysconf(_SC_PAGESIZE));
  int seed = 10;
  for (Shape shape : {Shape{1, 3, 5, 1024}, Shape{2, 3, 7, 1024}, Shape{1, 3, 5, 1024}, Shape{1, 3, 5, 1024}}) {
    const Tensor x = randomTensor(DataType::Float32, shape, seed++);
    std::vector<Tensor> expected, got;
    ASSERT_TRUE(normal->run({{"x", x}}, &expected).isOk());
    // The plan packs the weights and returns the file's pages. A read of any byte maps back the
    // whole page-cache folio around it (up to 2 MiB), so the bound is half of the 8 MiB.
    ASSERT_TRUE(low->resize({{"x", shape}}).isOk());
    EXPECT_LT(residentPages(file), pages / 2) << "of " << pages;
    const Status st = low->run({{"x", x}}, &got);
    ASSERT_TRUE(st.isOk()) << st.message();
    ASSERT_EQ(got[0].shape(), expected[0].shape());
    EXPECT_EQ(std::memcmp(got[0].data(), expected[0].data(), expected[0].bytes()), 0) << "shape " << shapeToString(shape);
  }
  std::remove(path.c_str());
}

TEST(MemoryLow, ArenaPagesGoBackBetweenRunsWithoutChangingResults) {
  const std::string path = writeTestModel();
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromFile(path, &interp).isOk());  // read, not mapped: only the arena goes
  auto normal = sessionOf(*interp, BackendConfig::Memory::Normal);
  auto low = sessionOf(*interp, BackendConfig::Memory::Low);
  for (int i = 0; i < 3; ++i) {
    const Tensor x = randomTensor(DataType::Float32, {3, 3, 9, 1024}, 40 + i);
    std::vector<Tensor> expected, got;
    ASSERT_TRUE(normal->run({{"x", x}}, &expected).isOk());
    ASSERT_TRUE(low->run({{"x", x}}, &got).isOk());
    EXPECT_EQ(std::memcmp(got[0].data(), expected[0].data(), expected[0].bytes()), 0) << "run " << i;
  }
  std::remove(path.c_str());
}

TEST(MemoryLow, MapFileReportsAMissingFile) {
  std::shared_ptr<Interpreter> interp;
  LoadOptions load;
  load.mapFile = true;
  const Status st = Interpreter::fromFile("/nonexistent/model.osp", load, &interp);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("/nonexistent/model.osp"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace osprey::test
