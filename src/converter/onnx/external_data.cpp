// ONNX external data: large models keep initializer bytes in side files next to the .onnx
// (data_location = EXTERNAL, external_data {location, offset, length}). The bytes are read
// here, checked against the tensor's declared size, and then treated like raw_data.
#include "converter/onnx/external_data.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "core/low_precision.h"

namespace osprey::onnx {
namespace {

namespace fs = std::filesystem;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

Status parseSize(const TensorProto& t, const std::string& key, const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return Status::invalidModel("tensor '" + t.name + "': external_data " + key + " '" + text + "' is not a byte count");
  *out = std::stoull(text);
  return Status::ok();
}

// Resolves `location` inside `baseDir` only: a model must not read arbitrary files.
Status resolveLocation(const TensorProto& t, const std::string& location, const std::string& baseDir, fs::path* out) {
  fs::path rel(location);
  if (location.empty() || rel.is_absolute())
    return Status::invalidModel("tensor '" + t.name + "': external data location '" + location +
                                "' must be a path relative to the model's folder");
  for (const auto& part : rel)
    if (part == "..")
      return Status::invalidModel("tensor '" + t.name + "': external data location '" + location +
                                  "' leaves the model's folder");
  *out = fs::path(baseDir.empty() ? "." : baseDir) / rel;
  return Status::ok();
}

class ExternalReader {
 public:
  explicit ExternalReader(std::string baseDir) : baseDir_(std::move(baseDir)) {}

  Status load(TensorProto* t) {
    if (!t->external) return Status::ok();
    if (baseDir_.empty() && !haveDir_)
      return Status::invalidModel("tensor '" + t->name +
                                  "' keeps its data in an external file; load the model from its file path so the file can be found");
    std::string location;
    uint64_t offset = 0, length = 0;
    bool hasLength = false;
    for (const auto& [key, value] : t->externalData) {
      if (key == "location") location = value;
      else if (key == "offset") OSPREY_RETURN_IF_ERROR(parseSize(*t, key, value, &offset));
      else if (key == "length") { OSPREY_RETURN_IF_ERROR(parseSize(*t, key, value, &length)); hasLength = true; }
    }
    if (t->dtype == DataType::Undefined || t->dtype == DataType::String) return Status::ok();  // reported per op later
    const int64_t n = t->elementCount();
    const int64_t stored = packedBytes(t->dtype, n);
    const uint64_t expected = static_cast<uint64_t>(stored) * dataTypeSize(t->dtype);
    if (hasLength && length != expected)
      return Status::invalidModel("tensor '" + t->name + "': external_data length " + std::to_string(length) +
                                  " does not match its shape and type (" + std::to_string(expected) + " bytes)");
    fs::path path;
    OSPREY_RETURN_IF_ERROR(resolveLocation(*t, location, baseDir_, &path));
    std::FILE* f = open(path);
    if (!f) return Status::invalidModel("tensor '" + t->name + "': cannot open external data file '" + path.string() + "'");
    std::error_code ec;
    const uint64_t fileSize = fs::file_size(path, ec);
    if (ec || offset > fileSize || expected > fileSize - offset)
      return Status::invalidModel("tensor '" + t->name + "': external data file '" + path.string() + "' holds " +
                                  std::to_string(fileSize) + " bytes, too few for " + std::to_string(expected) +
                                  " bytes at offset " + std::to_string(offset));
    std::vector<uint8_t> bytes(static_cast<size_t>(expected));
    if (std::fseek(f, static_cast<long>(offset), SEEK_SET) != 0 ||
        (expected && std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()))
      return Status::invalidModel("tensor '" + t->name + "': cannot read external data from '" + path.string() + "'");
    if (stored != n) {
      std::vector<uint8_t> unpacked(static_cast<size_t>(n));
      unpackSubByte(t->dtype, bytes.data(), n, unpacked.data());
      bytes.swap(unpacked);
    }
    t->data = std::move(bytes);
    t->external = false;
    t->externalData.clear();
    return Status::ok();
  }

  Status loadGraph(GraphProto* g, int depth) {
    if (depth > kMaxNestingDepth) return Status::invalidModel("graphs nest too deeply");
    for (auto& t : g->initializers) OSPREY_RETURN_IF_ERROR(load(&t));
    for (auto& node : g->nodes)
      for (auto& a : node.attributes) {
        OSPREY_RETURN_IF_ERROR(load(&a.t));
        for (auto& t : a.tensors) OSPREY_RETURN_IF_ERROR(load(&t));
        if (a.g) OSPREY_RETURN_IF_ERROR(loadGraph(a.g.get(), depth + 1));
        for (auto& sub : a.graphs)
          if (sub) OSPREY_RETURN_IF_ERROR(loadGraph(sub.get(), depth + 1));
      }
    return Status::ok();
  }

  void setHaveDir() { haveDir_ = true; }

 private:
  std::FILE* open(const fs::path& path) {
    auto it = files_.find(path.string());
    if (it != files_.end()) return it->second.get();
    std::FILE* f = std::fopen(path.string().c_str(), "rb");
    if (f) files_.emplace(path.string(), File(f));
    return f;
  }

  std::string baseDir_;
  bool haveDir_ = false;
  std::map<std::string, File> files_;  // one handle per side file, however many tensors use it
};

}  // namespace

Status loadExternalData(ModelProto* model, const std::string& baseDir, bool fromFile) {
  ExternalReader reader(baseDir);
  if (fromFile) reader.setHaveDir();
  return reader.loadGraph(&model->graph, 0);
}

}  // namespace osprey::onnx
