#include "vulkan_test_util.h"

#include <cmath>
#include <cstdlib>

namespace osprey::test {

bool vulkanAvailable(std::string* why) {
  for (const BackendDescription& b : availableBackends()) {
    if (b.name != "vulkan") continue;
    if (b.devices.empty()) {
      *why = "no Vulkan device is installed (try mesa-vulkan-drivers for lavapipe)";
      return false;
    }
    return true;
  }
  *why = "the Vulkan backend is not compiled into this build";
  return false;
}

VulkanOptions testVulkanOptions() {
  VulkanOptions o;
  if (const char* device = std::getenv("OSPREY_VULKAN_DEVICE")) o.device = device;
  return o;
}

Status createVulkanSession(const Interpreter& interp, std::unique_ptr<Session>* out,
                           BackendConfig::Precision precision, float fullPrecisionStem, bool halfMath,
                           bool mappedWeights) {
  ScheduleConfig schedule;
  schedule.backend = ForwardType::Vulkan;
  BackendConfig config;
  config.vulkan = testVulkanOptions();
  config.vulkan.halfMath = halfMath;
  config.vulkan.mappedWeights = mappedWeights;
  config.precision = precision;
  config.fullPrecisionStem = fullPrecisionStem;
  return interp.createSession(schedule, config, out);
}

namespace {
// Whether the test device's description (osprey backends) contains `fact`.
bool deviceSays(const std::string& fact) {
  const std::string wanted = testVulkanOptions().device;
  for (const BackendDescription& b : availableBackends()) {
    if (b.name != "vulkan") continue;
    for (const std::string& d : b.devices) {
      // Without a chosen device the runtime takes a GPU first; the tests' machines have one device.
      if (!wanted.empty() && d.find(wanted) == std::string::npos) continue;
      return d.find(fact) != std::string::npos;
    }
  }
  return false;
}
}  // namespace

bool vulkanHalfStorage() { return deviceSays("16-bit storage yes"); }
bool vulkanHalfMath() { return vulkanHalfStorage() && deviceSays("fp16 arithmetic yes"); }

Tensor trainedScaleWeights(const Shape& s, int64_t fanIn, uint32_t seed) {
  const double bound = std::sqrt(3.0 / static_cast<double>(fanIn));
  return randomTensor(DataType::Float32, s, seed, -bound, bound);
}

double tolerance(BackendConfig::Precision precision) {
  return precision == BackendConfig::Precision::Low ? 1e-2 : 1e-4;
}

std::string describeBackends(const SessionStats& stats) {
  std::string s;
  for (auto& [key, n] : stats.opsByBackend) s += (s.empty() ? "" : ", ") + key + " x" + std::to_string(n);
  return s;
}

bool noFallback(const SessionStats& stats) {
  if (stats.opsByBackend.empty()) return false;
  for (auto& [key, n] : stats.opsByBackend)
    if (key.rfind("vulkan:", 0) != 0) return false;
  return true;
}

void checkAgainstReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs) {
  {
    SCOPED_TRACE("fp32");
    checkAgainstReferenceAt(BackendConfig::Precision::Normal, node, inputs, numOutputs);
  }
  SCOPED_TRACE("fp16 storage (precision low, fp32 arithmetic)");
  checkAgainstReferenceAt(BackendConfig::Precision::Low, node, inputs, numOutputs, false);
}

void checkHalfMathAgainstReference(const Node& node, const std::vector<OpInput>& inputs) {
  if (!vulkanHalfMath()) GTEST_SKIP() << "the device has no fp16 arithmetic (shaderFloat16)";
  SCOPED_TRACE("fp16 storage and arithmetic (precision low)");
  checkAgainstReferenceAt(BackendConfig::Precision::Low, node, inputs, 1, true);
}

void checkAgainstReferenceAt(BackendConfig::Precision precision, const Node& node, const std::vector<OpInput>& inputs,
                             int numOutputs, bool halfMath) {
  std::vector<Tensor> expected;
  Status st = referenceOp(node, inputs, numOutputs, &expected);
  ASSERT_TRUE(st) << st.message();
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(node, inputs, numOutputs, &feeds);
  std::shared_ptr<Interpreter> interp;
  ASSERT_TRUE(Interpreter::fromModel(model, &interp));
  std::unique_ptr<Session> session;
  st = createVulkanSession(*interp, &session, precision, 0.f, halfMath);
  ASSERT_TRUE(st) << st.message();
  std::vector<Tensor> actual;
  st = session->run(feeds, &actual);
  ASSERT_TRUE(st) << st.message();
  EXPECT_TRUE(noFallback(session->stats())) << "ran as: " << describeBackends(session->stats());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    const Tensor& a = actual[o];
    const Tensor& e = expected[o];
    ASSERT_EQ(a.shape(), e.shape());
    ASSERT_EQ(a.dtype(), e.dtype());
    for (int64_t i = 0; i < e.elements(); ++i) {
      const double av = at(a, i), ev = at(e, i);
      if (std::isnan(ev)) {
        ASSERT_TRUE(std::isnan(av)) << "element " << i;
        continue;
      }
      ASSERT_NEAR(av, ev, tolerance(precision) * std::max(1.0, std::fabs(ev)))
          << "output " << o << " element " << i << " of " << shapeToString(e.shape());
    }
  }
}

}  // namespace osprey::test
