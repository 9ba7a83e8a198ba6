// Where: out = condition ? X : Y with multidirectional broadcasting over all three inputs.
// Only bytes move, so the kernel dispatches on element size, not on dtype.
#include <cstring>

#include "ops/broadcast_rows.h"
#include "ops/op_util.h"

namespace osprey {

namespace {

Status whereShape(const Node&, const TensorViews& in, TensorViews& out) {
  if (in[0].dtype != DataType::Bool)
    return Status::invalidModel("condition (input 0) must be bool, not " + std::string(dataTypeName(in[0].dtype)));
  if (in[1].dtype != in[2].dtype)
    return Status::invalidModel("X (input 1) has dtype " + std::string(dataTypeName(in[1].dtype)) +
                                " but Y (input 2) has " + dataTypeName(in[2].dtype));
  if (dataTypeSize(in[1].dtype) == 0) return Status::unsupported(dtypeError(in[1], "X (input 1)"));
  Shape s;
  OSPREY_RETURN_IF_ERROR(broadcastShapes(in[0].shape, in[1].shape, &s));
  OSPREY_RETURN_IF_ERROR(broadcastShapes(s, in[2].shape, &s));
  out[0].dtype = in[1].dtype;
  out[0].shape = s;
  return Status::ok();
}

template <class E>
void whereFor(const TensorViews& in, TensorView& out, ThreadPool* pool) {
  const uint8_t* c = in[0].as<const uint8_t>();  // bytes: any nonzero value is true
  const E* a = in[1].as<const E>();
  const E* b = in[2].as<const E>();
  E* o = out.as<E>();
  const auto plan = planBroadcastRows<3>(out.shape, {&in[0].shape, &in[1].shape, &in[2].shape});
  forEachBroadcastRow<3>(
      plan, pool, [&](int64_t oo, const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& s) {
        const uint8_t* cr = c + off[0];
        const E *ar = a + off[1], *br = b + off[2];
        E* orow = o + oo;
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
          for (int64_t i = 0; i < n; ++i) orow[i] = cr[i] ? ar[i] : br[i];
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {  // masking with a constant (attention masks)
          const E bv = *br;
          for (int64_t i = 0; i < n; ++i) orow[i] = cr[i] ? ar[i] : bv;
        } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {
          const E av = *ar;
          for (int64_t i = 0; i < n; ++i) orow[i] = cr[i] ? av : br[i];
        } else {
          for (int64_t i = 0; i < n; ++i) orow[i] = cr[i * s[0]] ? ar[i * s[1]] : br[i * s[2]];
        }
      });
}

Status whereKernel(const Node&, const TensorViews& in, TensorViews& out, ThreadPool* pool) {
  switch (dataTypeSize(out[0].dtype)) {
    case 1:
      whereFor<uint8_t>(in, out[0], pool);
      break;
    case 2:
      whereFor<uint16_t>(in, out[0], pool);
      break;
    case 4:
      whereFor<uint32_t>(in, out[0], pool);
      break;
    case 8:
      whereFor<uint64_t>(in, out[0], pool);
      break;
    default:
      return Status::unsupported(dtypeError(in[1], "X (input 1)"));
  }
  return Status::ok();
}

}  // namespace

const OpDef kOpDef_Where = {OpType::Where, "Where", 3, 3, 1, 1, whereShape, whereKernel, nullptr, 0, false};

}  // namespace osprey
