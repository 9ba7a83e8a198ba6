// The op-type enum, generated from the catalog in ops.def.
#pragma once
#include <cstdint>
#include <string_view>

namespace osprey {

enum class OpType : int32_t {
  Invalid = -1,
#define OSPREY_OP(name) name,
#include "core/ops.def"
#undef OSPREY_OP
  Count
};

const char* opTypeName(OpType t);
OpType opTypeFromName(std::string_view name);  // Invalid when unknown

}  // namespace osprey
