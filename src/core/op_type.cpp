#include "core/op_type.h"

#include <string>
#include <unordered_map>

namespace osprey {

namespace {
const char* const kOpNames[] = {
#define OSPREY_OP(name) #name,
#include "core/ops.def"
#undef OSPREY_OP
};
}  // namespace

const char* opTypeName(OpType t) {
  int i = static_cast<int>(t);
  if (i < 0 || i >= static_cast<int>(OpType::Count)) return "Invalid";
  return kOpNames[i];
}

OpType opTypeFromName(std::string_view name) {
  static const std::unordered_map<std::string, OpType> byName = [] {
    std::unordered_map<std::string, OpType> m;
    for (int i = 0; i < static_cast<int>(OpType::Count); ++i) m[kOpNames[i]] = static_cast<OpType>(i);
    return m;
  }();
  auto it = byName.find(std::string(name));
  return it == byName.end() ? OpType::Invalid : it->second;
}

}  // namespace osprey
