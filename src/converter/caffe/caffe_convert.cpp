// convertCaffeFiles and convertCaffeBytes (converter.h).
#include <chrono>
#include <filesystem>

#include "converter/converter.h"

#include "converter/caffe/caffe_import.h"
#include "core/files.h"

namespace osprey {

Status convertCaffeBytes(const std::string& prototxtText, const std::string& prototxtName, const uint8_t* weights,
                         size_t weightsSize, const std::string& weightsName, Model* out, const ConvertOptions& options,
                         ConvertReport* report) {
  const auto start = std::chrono::steady_clock::now();
  caffe::TextMessage net;
  OSPREY_RETURN_IF_ERROR(caffe::parseText(prototxtText, prototxtName, &net));
  caffe::LayerBlobs blobs;
  if (weights) OSPREY_RETURN_IF_ERROR(caffe::parseWeights(weights, weightsSize, weightsName, &blobs));
  *out = Model();
  int count = 0;
  OSPREY_RETURN_IF_ERROR(caffe::importNet(net, blobs, &out->graph, &count));
  ConvertReport r;
  r.caffeLayers = count;
  OSPREY_RETURN_IF_ERROR(optimizeGraph(out->graph, options, &r));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report) *report = r;
  return Status::ok();
}

Status convertCaffeFiles(const std::string& prototxt, const std::string& caffemodel, Model* out,
                         const ConvertOptions& options, ConvertReport* report) {
  std::vector<uint8_t> text, weights;
  OSPREY_RETURN_IF_ERROR(readFile(prototxt, &text));
  if (!caffemodel.empty()) OSPREY_RETURN_IF_ERROR(readFile(caffemodel, &weights));
  return convertCaffeBytes(std::string(text.begin(), text.end()), prototxt,
                           caffemodel.empty() ? nullptr : weights.data(), weights.size(), caffemodel, out, options,
                           report);
}

bool isCaffePrototxt(const std::string& path) { return std::filesystem::path(path).extension() == ".prototxt"; }

}  // namespace osprey
