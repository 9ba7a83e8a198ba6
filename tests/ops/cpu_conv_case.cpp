#include "cpu_conv_case.h"

#include <sstream>

namespace osprey::test {

BuiltConv buildConvCase(const CpuConvCase& k, uint32_t seed) {
  BuiltConv b;
  b.node.type = OpType::Conv;
  b.node.setInts("strides", {k.stride, k.stride});
  const std::vector<int64_t> pads = k.pads.empty() ? std::vector<int64_t>{k.pad, k.pad, k.pad, k.pad} : k.pads;
  b.node.setInts("pads", pads);
  b.node.setInts("dilations", {k.dilation, k.dilation});
  b.node.setInt("group", k.group);
  if (k.act != FusedActivation::Kind::None) {
    FusedActivation act;
    act.kind = k.act;
    act.a = k.act == FusedActivation::Kind::Clip ? 0.f : k.act == FusedActivation::Kind::Swish ? 1.f : 0.1f;
    act.b = k.act == FusedActivation::Kind::Clip ? 0.5f : 0.f;
    act.store(b.node);
  }
  b.inputs = {in(randomTensor(DataType::Float32, {k.n, k.c, k.h, k.w}, seed)),
              constant(randomTensor(DataType::Float32, {k.m, k.c / k.group, k.kh, k.kw}, seed + 1))};
  if (k.bias) b.inputs.push_back(constant(randomTensor(DataType::Float32, {k.m}, seed + 2)));
  auto out = [&](int64_t size, int64_t kernel, int64_t padSum) {
    return (size + padSum - k.dilation * (kernel - 1) - 1) / k.stride + 1;
  };
  b.outShape = {k.n, k.m, out(k.h, k.kh, pads[0] + pads[2]), out(k.w, k.kw, pads[1] + pads[3])};
  if (k.residual) {
    if (!k.bias) b.inputs.push_back(absent());
    b.inputs.push_back(in(randomTensor(DataType::Float32, b.outShape, seed + 3, -2, 2)));
  }
  return b;
}

std::string describeConvCase(const CpuConvCase& k) {
  std::ostringstream s;
  s << "conv x[" << k.n << "," << k.c << "," << k.h << "," << k.w << "] m=" << k.m << " k=" << k.kh << "x" << k.kw
    << " group=" << k.group << " stride=" << k.stride << " pad=" << k.pad << " dilation=" << k.dilation
    << " residual=" << k.residual << " threads=" << k.threads;
  return s.str();
}

}  // namespace osprey::test
