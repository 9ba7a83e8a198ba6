#pragma once
#include <cstddef>
#include <cstdint>

#include "core/graph.h"

namespace osprey::tfl {

// Builds the Osprey graph of a TFLite model (its main subgraph); no optimisation happens here.
// `data` is the whole file: buffers of models over 2 GB lie after the FlatBuffer. Unsupported
// ops are collected, so that one message lists them all with their counts.
Status importTfliteModel(const uint8_t* data, size_t size, Model* out, int* operatorCount);

}  // namespace osprey::tfl
