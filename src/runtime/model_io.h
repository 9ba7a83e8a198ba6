// Reading and writing the .osp FlatBuffers format (schema/osprey.fbs).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/graph.h"

namespace osprey {

// Verifies the bytes (FlatBuffers verifier, then indices, op types and arities) and builds the
// in-memory model. Corrupt or truncated bytes give an error, never a crash. With `owner` (a
// pointer that keeps the bytes alive) the constants point into the bytes instead of copying them.
Status readModel(const uint8_t* data, size_t size, Model* out, std::shared_ptr<const void> owner = nullptr);
Status writeModel(const Model& model, std::vector<uint8_t>* out);

}  // namespace osprey
