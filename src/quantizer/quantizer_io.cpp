// Files around quantization: the float model a quantizer starts from, the calibration folder,
// the quantized .osp.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "converter/converter.h"
#include "core/files.h"
#include "core/npy.h"
#include "quantizer/quantizer_io.h"
#include "runtime/model_io.h"

namespace osprey {

namespace fs = std::filesystem;

Status loadFloatModel(const std::string& path, const QuantizeOptions& options, Model* out) {
  const bool osp = path.size() > 4 && path.compare(path.size() - 4, 4, ".osp") == 0;
  if (!osp) {
    // The integer ops take neither a Conv's residual nor a MatMul's bias: those fusions run after.
    // MatMulNBits takes a bias and an activation, so weight-only quantization starts from the
    // fully fused graph (with the attention passes, which need the bias fused).
    ConvertOptions convert;
    convert.fuseConvResidual = options.weightBits != 0;
    convert.fuseMatMulBias = options.weightBits != 0;
    return convertOnnxFile(path, out, convert).withContext(path);
  }
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  OSPREY_RETURN_IF_ERROR(readFile(path, bytes.get()));
  return readModel(bytes->data(), bytes->size(), out, bytes).withContext(path);
}

Status saveModelFile(const Model& model, const std::string& path) {
  std::vector<uint8_t> bytes;
  OSPREY_RETURN_IF_ERROR(writeModel(model, &bytes));
  return writeFile(path, bytes);
}

namespace {

Status npyTensor(const std::string& path, Tensor* out) {
  NpyArray a;
  OSPREY_RETURN_IF_ERROR(readNpy(path, &a));
  Tensor t(a.dtype, Shape(a.shape.begin(), a.shape.end()));
  if (t.bytes() != a.data.size()) return Status::invalidModel(path + ": the data does not match its header");
  std::memcpy(t.data(), a.data.data(), a.data.size());
  *out = std::move(t);
  return Status::ok();
}

}  // namespace

Status readCalibrationFolder(const std::string& dir, const std::vector<std::string>& inputNames,
                             std::vector<FeedDict>* out) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::notFound("calibration folder '" + dir + "' is not a directory");
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) entries.push_back(e.path());
  if (ec) return Status::notFound("cannot list calibration folder '" + dir + "': " + ec.message());
  std::sort(entries.begin(), entries.end());
  out->clear();
  for (const fs::path& p : entries) {
    FeedDict feed;
    if (fs::is_directory(p, ec)) {  // one sample: a .npy per input, named after it
      for (const std::string& name : inputNames) {
        Tensor t;
        OSPREY_RETURN_IF_ERROR(npyTensor((p / (name + ".npy")).string(), &t).withContext("calibration sample " + p.string()));
        feed[name] = std::move(t);
      }
    } else if (p.extension() == ".npy") {
      if (inputNames.size() != 1)
        return Status::invalidArgument("the model has " + std::to_string(inputNames.size()) +
                                       " inputs: give each calibration sample as a folder of <input name>.npy files (" +
                                       p.string() + " is a single file)");
      Tensor t;
      OSPREY_RETURN_IF_ERROR(npyTensor(p.string(), &t));
      feed[inputNames[0]] = std::move(t);
    } else {
      continue;
    }
    out->push_back(std::move(feed));
  }
  if (out->empty()) return Status::notFound("calibration folder '" + dir + "' holds no .npy files or sample folders");
  return Status::ok();
}

}  // namespace osprey
