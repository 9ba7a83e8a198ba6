// CudaOptions::autotune and tuningCachePath: timed choices give the untuned results (within
// the precision's tolerance), are written to the cache file when the runtime ends, serve a later
// runtime without autotune, are kept apart for sessions that run without CUDA graphs, and a
// corrupt cache file is an untuned start that gets rewritten.
#include <algorithm>
#include <cstdio>

#include "../unit/graph_builder.h"
#include "backends/cuda/tuning_cache_file.h"
#include "core/files.h"
#include "cuda_test_util.h"

namespace osprey::test {
namespace {

// x [4, 16, 14, 14] -> Conv 3x3 (bias) -> Relu -> GlobalAveragePool -> Flatten -> MatMul [32, 24].
std::shared_ptr<Interpreter> convMatMulInterpreter() {
  GraphBuilder b;
  int x = b.input("x", {4, 16, 14, 14});
  x = b.op(OpType::Conv, {x, b.weights(randomTensor(DataType::Float32, {32, 16, 3, 3}, 7)),
                          b.weights(randomTensor(DataType::Float32, {32}, 8))});
  b.g.nodes.back().setInts("pads", {1, 1, 1, 1});
  x = b.op(OpType::Relu, {x});
  x = b.op(OpType::GlobalAveragePool, {x});
  x = b.op(OpType::Flatten, {x});
  b.output(b.op(OpType::MatMul, {x, b.weights(randomTensor(DataType::Float32, {32, 24}, 9))}));
  auto model = std::make_shared<Model>();
  model->graph = b.g;
  std::shared_ptr<Interpreter> interp;
  EXPECT_TRUE(Interpreter::fromModel(model, &interp).isOk());
  return interp;
}

Tensor runOnce(Interpreter& interp, const BackendConfig& config) {
  ScheduleConfig onCuda;
  onCuda.backend = ForwardType::CUDA;
  std::unique_ptr<Session> session;
  Status st = interp.createSession(onCuda, config, &session);
  EXPECT_TRUE(st.isOk()) << st.message();
  std::vector<Tensor> out;
  if (session) st = session->run({{"x", randomTensor(DataType::Float32, {4, 16, 14, 14}, 3)}}, &out);
  EXPECT_TRUE(st.isOk()) << st.message();
  return out.empty() ? Tensor() : out[0];
}  // the session, and with it its runtime, ends here: the cache file is written

bool readCache(const std::string& path, cuda::TuningCacheFile* file) {
  std::vector<uint8_t> bytes;
  return readFile(path, &bytes).isOk() && cuda::parseTuningCacheFile(bytes.data(), bytes.size(), file);
}

int keysStartingWith(const cuda::TuningCacheFile& file, const std::string& prefix) {
  int n = 0;
  for (const auto& [key, value] : file.entries) n += key.rfind(prefix, 0) == 0;
  return n;
}

TEST(CudaTuning, TimedChoicesAreCachedAndReused) {
  OSPREY_REQUIRE_CUDA_DEVICE();
  auto interp = convMatMulInterpreter();
  for (const bool low : {false, true}) {
    SCOPED_TRACE(low ? "fp16" : "fp32");
    BackendConfig plain;
    if (low) plain.precision = BackendConfig::Precision::Low;
    const double tolerance = low ? 2e-2 : 1e-4;
    const Tensor reference = runOnce(*interp, plain);
    const double scale = std::max(1.0, maxAbsDiff(reference, Tensor(reference.dtype(), reference.shape())));

    const std::string path = ::testing::TempDir() + "osprey_cuda_tuning_" + (low ? "fp16" : "fp32") + ".cache";
    std::remove(path.c_str());
    BackendConfig tuned = plain;
    tuned.cuda.autotune = true;
    tuned.cuda.tuningCachePath = path;
    EXPECT_LE(maxAbsDiff(runOnce(*interp, tuned), reference), tolerance * scale);
    cuda::TuningCacheFile file;
    ASSERT_TRUE(readCache(path, &file)) << path;
    EXPECT_NE(file.identity.find("sm_"), std::string::npos) << file.identity;
    EXPECT_GE(keysStartingWith(file, "conv"), 1);
    EXPECT_GE(keysStartingWith(file, "lt,"), 1);

    BackendConfig cachedOnly = plain;  // no timing: the recorded choices serve
    cachedOnly.cuda.tuningCachePath = path;
    EXPECT_LE(maxAbsDiff(runOnce(*interp, cachedOnly), reference), tolerance * scale);

    BackendConfig eager = tuned;  // runs not captured: trials time eager launches, keyed apart
    eager.cuda.graphs = false;
    EXPECT_LE(maxAbsDiff(runOnce(*interp, eager), reference), tolerance * scale);
    cuda::TuningCacheFile both;
    ASSERT_TRUE(readCache(path, &both));
    int eagerKeys = 0;
    for (const auto& [key, value] : both.entries) eagerKeys += key.size() > 6 && key.substr(key.size() - 6) == ",eager";
    EXPECT_EQ(eagerKeys, static_cast<int>(file.entries.size()));
    EXPECT_EQ(both.entries.size(), 2 * file.entries.size());

    ASSERT_TRUE(writeFile(path, std::vector<uint8_t>{'o', 's', 'p', 'r', 'e', 'y', '-', 'c', 'u'}).isOk());
    EXPECT_LE(maxAbsDiff(runOnce(*interp, tuned), reference), tolerance * scale);
    cuda::TuningCacheFile rewritten;
    ASSERT_TRUE(readCache(path, &rewritten)) << "a corrupt cache is replaced when the runtime ends";
    EXPECT_EQ(rewritten.entries.size(), file.entries.size());
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace osprey::test
