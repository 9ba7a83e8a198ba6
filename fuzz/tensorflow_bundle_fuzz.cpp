// TensorFlow SavedModel bytes: as a variables.index -> SSTable reader -> bundle entries -> each
// tensor decoded from the same bytes as its shard; and as a saved_model.pb -> SavedModel reader
// -> signature graph (functions inlined, v2 While lowered) -> importer -> passes -> one run.
#include "converter/converter.h"
#include "converter/tensorflow/saved_model.h"
#include "converter/tensorflow/tensor_bundle.h"
#include "converter/tensorflow/tf_import.h"
#include "fuzz_run.h"

extern "C" int OSPREY_FUZZ_ENTRY(const uint8_t* data, size_t size) {
  using namespace osprey;
  tf::TensorBundle bundle;
  if (bundle.parseIndex(data, size, "fuzz.index")) {
    for (const auto& [key, entry] : bundle.entries()) {
      if (static_cast<uint64_t>(entry.offset) > size || static_cast<uint64_t>(entry.size) > size - entry.offset) continue;
      tf::TfTensor tensor;
      (void)tf::TensorBundle::decode(key, entry, data + entry.offset, static_cast<size_t>(entry.size), "fuzz.data", &tensor);
    }
  }
  std::vector<tf::MetaGraph> metas;
  if (!tf::parseSavedModel(data, size, &metas)) return 0;
  // Every variable is one float: shapes may then disagree, which the importer must refuse.
  const tf::VariableReader readVariable = [](const std::string&, tf::TfTensor* out) {
    out->tfType = tf::DT_FLOAT;
    out->shape = {1};
    out->bytes.assign(4, 0);
    return Status::ok();
  };
  for (const tf::MetaGraph& meta : metas) {
    tf::GraphDef graph;
    if (!tf::signatureGraph(meta, "", readVariable, &graph)) continue;
    auto model = std::make_shared<Model>();
    if (!tf::importGraphDef(graph, {}, model.get()) || !optimizeGraph(model->graph)) continue;
    std::shared_ptr<Interpreter> interp;
    if (Interpreter::fromModel(model, &interp)) fuzz::runWithInputsFrom(*interp, data, size);
  }
  return 0;
}
