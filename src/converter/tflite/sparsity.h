// Sparse TFLite constants (SparsityParameters: a traversal order over the dimensions and their
// blocks, each level dense or CSR) expanded to dense bytes at import, as TFLite's DENSIFY does
// once at preparation. Every index in the file is checked: a corrupt tensor is an error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "osprey/status.h"
#include "osprey/types.h"
#include "tflite_generated.h"

namespace osprey::tfl {

// `values` holds the stored elements (elementSize bytes each) in traversal order; `dense` gets
// shapeElements(shape) elements, zeros where nothing is stored.
Status densify(const std::string& tensorName, const tflite::SparsityParameters& sparsity, const Shape& shape,
               size_t elementSize, const uint8_t* values, size_t valueBytes, std::vector<uint8_t>* dense);

}  // namespace osprey::tfl
