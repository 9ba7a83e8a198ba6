// QLinearSigmoid and QLinearLeakyRelu map each of the 256 byte codes to one result: the table
// their reference kernel (qlinear_contrib.cpp) applies, for backends that keep it between runs.
#pragma once
#include <cstdint>

#include "core/graph.h"

namespace osprey {

// False for other ops. t is Int8 or UInt8; table[code byte] is the output code.
bool qlinearLookupTable(const Node& node, DataType t, float sX, int32_t zX, float sY, int32_t zY, int32_t table[256]);

}  // namespace osprey
