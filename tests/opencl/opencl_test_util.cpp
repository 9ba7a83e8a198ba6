#include "opencl_test_util.h"

#include <cmath>
#include <cstdlib>

#include "core/graph.h"
#include "geometry/raster.h"
#include "ops/op_def.h"

namespace osprey::test {

bool openclAvailable(std::string* why) {
  for (const BackendDescription& b : availableBackends()) {
    if (b.name != "opencl") continue;
    if (b.devices.empty()) {
      *why = "no OpenCL platform with a device is installed (try pocl-opencl-icd)";
      return false;
    }
    return true;
  }
  *why = "the OpenCL backend is not compiled into this build";
  return false;
}

Status createOpenCLSession(const Interpreter& interp, BackendConfig::Precision precision, std::unique_ptr<Session>* out) {
  ScheduleConfig schedule;
  schedule.backend = ForwardType::OpenCL;
  BackendConfig config;
  config.precision = precision;
  config.opencl = testOpenCLOptions();
  return interp.createSession(schedule, config, out);
}

Status runOnOpenCL(Node node, const std::vector<OpInput>& inputs, int numOutputs, BackendConfig::Precision precision,
                   DeviceRun* out) {
  std::map<std::string, Tensor> feeds;
  auto model = oneNodeModel(std::move(node), inputs, numOutputs, &feeds);
  std::shared_ptr<Interpreter> interp;
  OSPREY_RETURN_IF_ERROR(Interpreter::fromModel(model, &interp));
  std::unique_ptr<Session> session;
  OSPREY_RETURN_IF_ERROR(createOpenCLSession(*interp, precision, &session));
  OSPREY_RETURN_IF_ERROR(session->run(feeds, &out->outputs));
  out->stats = session->stats();
  return Status::ok();
}

Status runReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs,
                    std::vector<Tensor>* outputs) {
  const OpDef& def = opDef(node.type);
  TensorViews in, outs(numOutputs);
  for (auto& i : inputs) {
    TensorView v;
    if (i.absent) {
      v.present = false;
    } else {
      v.dtype = i.value.dtype();
      v.shape = i.value.shape();
      v.data = const_cast<void*>(static_cast<const void*>(i.value.data()));
    }
    in.push_back(v);
  }
  OSPREY_RETURN_IF_ERROR(def.shape(node, in, outs));
  outputs->clear();
  for (auto& o : outs) outputs->emplace_back(o.dtype, o.shape);
  for (size_t i = 0; i < outs.size(); ++i) outs[i].data = (*outputs)[i].data();
  if (def.reference) return def.reference(node, in, outs, nullptr);
  // Data movement without a reference kernel: its Raster lowering is the definition.
  std::vector<RasterPlan> plans;
  OSPREY_RETURN_IF_ERROR(def.lower(node, in, outs, plans));
  for (size_t i = 0; i < plans.size(); ++i) {
    std::vector<const void*> srcs;
    for (auto& v : in) srcs.push_back(v.data);
    executeRaster(plans[i], srcs, outs[i].data, outs[i].elements(), static_cast<int>(dataTypeSize(outs[i].dtype)),
                  static_cast<int>(outs[i].dtype));
  }
  return Status::ok();
}

std::string describeBackends(const SessionStats& stats) {
  std::string s;
  for (auto& [key, n] : stats.opsByBackend) s += (s.empty() ? "" : ", ") + key + " x" + std::to_string(n);
  return s;
}

bool noFallback(const SessionStats& stats) {
  if (stats.opsByBackend.empty()) return false;
  for (auto& [key, n] : stats.opsByBackend)
    if (key.rfind("opencl:", 0) != 0) return false;
  return true;
}

void checkAgainstReference(const Node& node, const std::vector<OpInput>& inputs, int numOutputs) {
  for (auto memory : {OpenCLOptions::Memory::Buffer, OpenCLOptions::Memory::Image}) {
    SCOPED_TRACE(memory == OpenCLOptions::Memory::Buffer ? "memory buffer" : "memory image");
    ScopedOpenCLOptions scoped([memory](OpenCLOptions& o) { o.memory = memory; });
    checkInOneMemoryMode(node, inputs, numOutputs);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

OpenCLOptions& testOpenCLOptions() {
  static OpenCLOptions options = [] {
    OpenCLOptions o;
    if (const char* cache = std::getenv("OSPREY_OPENCL_CACHE")) o.tuningCachePath = cache;
    if (const char* platform = std::getenv("OSPREY_OPENCL_PLATFORM")) o.platform = platform;
    if (const char* device = std::getenv("OSPREY_OPENCL_DEVICE")) o.device = device;
    return o;
  }();
  return options;
}

void checkInOneMemoryMode(const Node& node, const std::vector<OpInput>& inputs, int numOutputs) {
  std::vector<Tensor> expected;
  Status st = runReference(node, inputs, numOutputs, &expected);
  ASSERT_TRUE(st) << st.message();
  for (auto precision : {BackendConfig::Precision::Normal, BackendConfig::Precision::Low}) {
    const bool fp16 = precision == BackendConfig::Precision::Low;
    const double tol = fp16 ? 1e-2 : 1e-4;
    DeviceRun run;
    st = runOnOpenCL(node, inputs, numOutputs, precision, &run);
    ASSERT_TRUE(st) << st.message();
    EXPECT_TRUE(noFallback(run.stats)) << "ran as: " << describeBackends(run.stats);
    ASSERT_EQ(run.outputs.size(), expected.size());
    for (size_t o = 0; o < expected.size(); ++o) {
      const Tensor& a = run.outputs[o];
      const Tensor& e = expected[o];
      ASSERT_EQ(a.shape(), e.shape());
      ASSERT_EQ(a.dtype(), e.dtype());
      for (int64_t i = 0; i < e.elements(); ++i) {
        const double av = at(a, i), ev = at(e, i);
        if (std::isnan(ev)) {
          ASSERT_TRUE(std::isnan(av)) << "element " << i;
          continue;
        }
        ASSERT_NEAR(av, ev, tol * std::max(1.0, std::fabs(ev)))
            << (fp16 ? "fp16" : "fp32") << " output " << o << " element " << i << " of " << shapeToString(e.shape());
      }
    }
  }
}

}  // namespace osprey::test
