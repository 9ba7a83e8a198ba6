// Reading and writing the .osp FlatBuffers format (schema/osprey.fbs).
#pragma once
#include <string>
#include <vector>

#include "core/graph.h"

namespace osprey {

// Verifies the bytes (FlatBuffers verifier, then indices, op types and arities) and builds the
// in-memory model. Corrupt or truncated bytes give an error, never a crash.
Status readModel(const uint8_t* data, size_t size, Model* out);
Status writeModel(const Model& model, std::vector<uint8_t>* out);
Status readFile(const std::string& path, std::vector<uint8_t>* out);
Status writeFile(const std::string& path, const std::vector<uint8_t>& bytes);
// Checks each node against its OpDef: input and output counts.
Status checkOpArity(const Graph& graph);

}  // namespace osprey
