// The SavedModel reader (saved_model.h).
#include "converter/tensorflow/saved_model.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "converter/proto_wire.h"
#include "converter/tensorflow/tensor_bundle.h"
#include "converter/tensorflow/tf_context.h"
#include "converter/tensorflow/tf_functions.h"
#include "core/files.h"

namespace osprey::tf {

namespace {

using wire::Ctx;
using wire::Field;
using wire::FieldSpec;
using wire::MessageSpec;

constexpr FieldSpec kSavedModelFields[] = {{2, "meta_graphs", wire::kLen}};
constexpr MessageSpec kSavedModel = {"SavedModel", kSavedModelFields, 1};
constexpr FieldSpec kMetaGraphFields[] = {{1, "meta_info_def", wire::kLen},
                                          {2, "graph_def", wire::kLen},
                                          {3, "saver_def", wire::kLen},
                                          {5, "signature_def", wire::kLen}};
constexpr MessageSpec kMetaGraph = {"MetaGraphDef", kMetaGraphFields, 4};
constexpr FieldSpec kMetaInfoFields[] = {{4, "tags", wire::kLen}};
constexpr MessageSpec kMetaInfo = {"MetaInfoDef", kMetaInfoFields, 1};
constexpr FieldSpec kSaverFields[] = {{3, "restore_op_name", wire::kLen}};
constexpr MessageSpec kSaver = {"SaverDef", kSaverFields, 1};
constexpr FieldSpec kMapEntryFields[] = {{1, "key", wire::kLen}, {2, "value", wire::kLen}};
constexpr MessageSpec kSignatureEntry = {"MetaGraphDef.SignatureDefEntry", kMapEntryFields, 2};
constexpr MessageSpec kTensorInfoEntry = {"SignatureDef.TensorInfoEntry", kMapEntryFields, 2};
constexpr FieldSpec kSignatureFields[] = {{1, "inputs", wire::kLen}, {2, "outputs", wire::kLen}};
constexpr MessageSpec kSignature = {"SignatureDef", kSignatureFields, 2};
constexpr FieldSpec kTensorInfoFields[] = {{1, "name", wire::kLen}, {2, "dtype", wire::kVarint}};
constexpr MessageSpec kTensorInfo = {"TensorInfo", kTensorInfoFields, 2};

template <class Fn>
Status eachField(Ctx& c, const MessageSpec& spec, size_t begin, size_t end, Fn&& fn) {
  wire::Reader r(c, spec, begin, end);
  Field f;
  for (;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) { return fn(f, b, e); }));
  }
}

Status parseSignature(Ctx& c, size_t begin, size_t end, Signature* sig) {
  return eachField(c, kSignature, begin, end, [&](const Field& f, size_t b, size_t e) {
    SignatureTensor t;
    OSPREY_RETURN_IF_ERROR(eachField(c, kTensorInfoEntry, b, e, [&](const Field& k, size_t kb, size_t ke) -> Status {
      if (k.spec->number == 1) {
        t.key = c.str(kb, ke);
        return Status::ok();
      }
      wire::Reader r(c, kTensorInfo, kb, ke);
      Field info;
      for (;;) {
        OSPREY_RETURN_IF_ERROR(r.next(&info));
        if (!info.spec) return Status::ok();
        if (info.spec->number == 1) t.tensor = c.str(info.begin, info.end);
        else t.dtype = static_cast<int32_t>(info.bits);
      }
    }));
    (f.spec->number == 1 ? sig->inputs : sig->outputs).push_back(std::move(t));
    return Status::ok();
  });
}

Status parseMetaGraph(Ctx& c, size_t begin, size_t end, MetaGraph* meta) {
  return eachField(c, kMetaGraph, begin, end, [&](const Field& f, size_t b, size_t e) -> Status {
    switch (f.spec->number) {
      case 1:
        return eachField(c, kMetaInfo, b, e, [&](const Field&, size_t tb, size_t te) {
          meta->tags.push_back(c.str(tb, te));
          return Status::ok();
        });
      case 2: return parseGraphDef(c.buf + b, e - b, &meta->graph);
      case 3:
        return eachField(c, kSaver, b, e, [&](const Field&, size_t nb, size_t ne) {
          meta->restoreOp = c.str(nb, ne);
          return Status::ok();
        });
      default: {
        Signature sig;
        OSPREY_RETURN_IF_ERROR(eachField(c, kSignatureEntry, b, e, [&](const Field& k, size_t kb, size_t ke) {
          if (k.spec->number == 1) {
            sig.name = c.str(kb, ke);
            return Status::ok();
          }
          return parseSignature(c, kb, ke, &sig);
        }));
        meta->signatures.push_back(std::move(sig));
        return Status::ok();
      }
    }
  });
}

bool isVariable(const std::string& op) { return op == "VarHandleOp" || op == "VariableV2" || op == "Variable"; }

std::string signatureNames(const MetaGraph& meta) {
  std::string names;
  for (const Signature& s : meta.signatures)
    if (s.name != "__saved_model_init_op") names += (names.empty() ? "" : ", ") + s.name;
  return names.empty() ? "none" : names;
}

Status pickSignature(const MetaGraph& meta, const std::string& name, const Signature** out) {
  const std::string wanted = name.empty() ? "serving_default" : name;
  for (const Signature& s : meta.signatures)
    if (s.name == wanted) {
      *out = &s;
      return Status::ok();
    }
  return Status::invalidArgument("the SavedModel has no signature '" + wanted + "' (it has: " + signatureNames(meta) +
                                 "; --signature NAME picks one)");
}

}  // namespace

Status parseSavedModel(const uint8_t* data, size_t size, std::vector<MetaGraph>* out) {
  out->clear();
  Ctx c{data, size, "TensorFlow SavedModel", 24};
  return eachField(c, kSavedModel, 0, size, [&](const Field&, size_t b, size_t e) {
    out->emplace_back();
    return parseMetaGraph(c, b, e, &out->back());
  });
}

Status signatureGraph(const MetaGraph& meta, const std::string& signature, const VariableReader& readVariable,
                      GraphDef* out) {
  const Signature* sig = nullptr;
  OSPREY_RETURN_IF_ERROR(pickSignature(meta, signature, &sig));
  const std::string label = "signature '" + sig->name + "'";
  if (sig->outputs.empty()) return Status::invalidModel(label + " has no outputs");
  std::vector<SignatureTensor> outputs = sig->outputs;
  std::sort(outputs.begin(), outputs.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  std::vector<std::string> reserved, refs;
  for (const SignatureTensor& t : sig->inputs)  // a Placeholder already named by its key keeps it
    if (refNode(canonicalRef(t.tensor)) != t.key) reserved.push_back(t.key);
  for (const SignatureTensor& t : outputs) reserved.push_back(t.key), refs.push_back(t.tensor);
  std::vector<NodeDef> nodes;
  std::vector<FunctionDef> branches;
  OSPREY_RETURN_IF_ERROR(inlineFunctions(meta.graph, reserved, &refs, &nodes, &branches).withContext(label));
  std::map<std::string, std::string> keys;
  OSPREY_RETURN_IF_ERROR(variableCheckpointKeys(meta.graph, meta.restoreOp, &keys));

  // Inputs: the Placeholders the signature names, renamed to its keys.
  std::map<std::string, std::string> inputRefs;  // "serving_default_x:0" -> "x:0"
  for (const SignatureTensor& t : sig->inputs) {
    const std::string node = refNode(canonicalRef(t.tensor));
    auto it = std::find_if(meta.graph.nodes.begin(), meta.graph.nodes.end(), [&](const NodeDef& n) { return n.name == node; });
    if (it == meta.graph.nodes.end() || it->op != "Placeholder")
      return Status::invalidModel(label + ": input '" + t.key + "' is '" + t.tensor + "', which is not a Placeholder");
    inputRefs[canonicalRef(t.tensor)] = t.key + ":0";
    auto kept = std::find_if(nodes.begin(), nodes.end(), [&](const NodeDef& n) { return n.name == node; });
    if (kept == nodes.end()) kept = nodes.insert(nodes.begin(), *it);
    kept->name = t.key;
  }
  for (NodeDef& n : nodes)
    for (std::string& in : n.inputs)
      if (auto it = inputRefs.find(in); it != inputRefs.end()) in = it->second;
  for (std::string& ref : refs)
    if (auto it = inputRefs.find(ref); it != inputRefs.end()) ref = it->second;

  // Variables become constants; reading one is then an Identity.
  auto constantVariables = [&](std::vector<NodeDef>& graphNodes) -> Status {
    for (NodeDef& n : graphNodes) {
      if (n.op == "ReadVariableOp") {
        n.op = "Identity";
        n.inputs.resize(std::min<size_t>(n.inputs.size(), 1));
        n.attrs.clear();
        continue;
      }
      if (!isVariable(n.op)) continue;
      const std::string nodeLabel = "variable node '" + n.name + "' (" + n.op + ")";
      auto key = keys.find(n.name);
      if (key == keys.end())
        return Status::invalidModel(label + ": " + nodeLabel + " is not restored from the checkpoint by the restore op '" +
                                    meta.restoreOp + "'");
      AttrValue value;
      value.kind = AttrValue::Kind::Tensor;
      value.tensor = std::make_shared<TfTensor>();
      OSPREY_RETURN_IF_ERROR(readVariable(key->second, value.tensor.get()).withContext(nodeLabel));
      n.op = "Const";
      n.inputs.clear();
      n.attrs.clear();
      n.attrs["value"] = std::move(value);
    }
    return Status::ok();
  };
  OSPREY_RETURN_IF_ERROR(constantVariables(nodes));
  for (FunctionDef& branch : branches) OSPREY_RETURN_IF_ERROR(constantVariables(branch.nodes));
  for (size_t i = 0; i < outputs.size(); ++i) {
    NodeDef identity;
    identity.name = outputs[i].key;
    identity.op = "Identity";
    identity.inputs = {refs[i]};
    nodes.push_back(std::move(identity));
  }
  out->nodes = std::move(nodes);
  out->library = std::move(branches);
  out->branchesInlined = true;
  return Status::ok();
}

Status inlineGraphFunctions(GraphDef* graph) {
  std::set<std::string> functions;
  for (const FunctionDef& fn : graph->library) functions.insert(fn.name);
  static const std::set<std::string> kFunctional = {"PartitionedCall", "StatefulPartitionedCall", "While",
                                                    "StatelessWhile", "If", "StatelessIf"};
  std::set<std::string> read;
  bool calls = false;
  for (const NodeDef& n : graph->nodes) {
    calls = calls || kFunctional.count(n.op) || functions.count(n.op);
    for (const std::string& in : n.inputs)
      if (!in.empty() && in[0] != '^') read.insert(refNode(canonicalRef(in)));
  }
  if (!calls || graph->branchesInlined) return Status::ok();
  // The outputs the importer would pick, kept under their names by Identity nodes.
  std::vector<std::string> names, refs;
  for (const NodeDef& n : graph->nodes)
    if (!read.count(n.name) && n.op != "NoOp" && n.op != "Const" && n.op != "Placeholder" && n.op != "Assert")
      names.push_back(n.name), refs.push_back(n.name + ":0");
  std::vector<NodeDef> nodes;
  std::vector<FunctionDef> branches;
  OSPREY_RETURN_IF_ERROR(inlineFunctions(*graph, names, &refs, &nodes, &branches));
  for (size_t i = 0; i < names.size(); ++i) {
    NodeDef identity;
    identity.name = names[i];
    identity.op = "Identity";
    identity.inputs = {refs[i]};
    nodes.push_back(std::move(identity));
  }
  graph->nodes = std::move(nodes);
  graph->library = std::move(branches);
  graph->branchesInlined = true;
  return Status::ok();
}

Status loadSavedModel(const std::string& dir, const std::string& signature, GraphDef* out) {
  const std::string pbPath = (std::filesystem::path(dir) / "saved_model.pb").string();
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(readFile(pbPath, &bytes));
  std::vector<MetaGraph> metas;
  OSPREY_RETURN_IF_ERROR_IN(parseSavedModel(bytes.data(), bytes.size(), &metas), pbPath);
  bytes = {};
  const MetaGraph* meta = nullptr;
  std::string tags;
  for (const MetaGraph& m : metas) {
    for (const std::string& t : m.tags) tags += (tags.empty() ? "" : ", ") + t;
    if (std::find(m.tags.begin(), m.tags.end(), "serve") != m.tags.end() && !meta) meta = &m;
  }
  if (!meta && metas.size() == 1) meta = &metas[0];
  if (!meta)
    return Status::invalidModel(pbPath + ": no MetaGraphDef is tagged 'serve' (tags: " + (tags.empty() ? "none" : tags) + ")");
  const std::string prefix = (std::filesystem::path(dir) / "variables" / "variables").string();
  TensorBundle bundle;
  bool bundleOpened = false;
  const VariableReader read = [&](const std::string& key, TfTensor* tensor) -> Status {
    if (!bundleOpened) {
      OSPREY_RETURN_IF_ERROR(TensorBundle::open(prefix, &bundle));
      bundleOpened = true;
    }
    return bundle.read(key, tensor);
  };
  return signatureGraph(*meta, signature, read, out).withContext(dir);
}

}  // namespace osprey::tf
