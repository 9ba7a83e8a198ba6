// A .caffemodel's weights: the NetParameter binary, of which Osprey reads each layer's name and
// blobs (current `layer` LayerParameter and legacy `layers` V1LayerParameter); the network
// itself comes from the deploy prototxt. Decoded on the bounds-checked wire layer.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "osprey/types.h"
#include "osprey/status.h"

namespace osprey::caffe {

struct Blob {
  Shape shape;  // from BlobShape, or the legacy [num, channels, height, width]: importers go by element counts
  std::vector<float> data;
};

using LayerBlobs = std::map<std::string, std::vector<Blob>>;

// The blobs of every layer of the weights file `bytes` (named `source` in errors).
Status parseWeights(const uint8_t* bytes, size_t size, const std::string& source, LayerBlobs* out);

}  // namespace osprey::caffe
