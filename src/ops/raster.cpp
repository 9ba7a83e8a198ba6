// Raster is made by geometry lowering inside a session; a model file may not contain it.
#include "ops/op_def.h"

namespace osprey {

namespace {
Status rasterInModel(const Node&, const TensorViews&, TensorViews&) {
  return Status::invalidModel("Raster is internal to Osprey and cannot appear in a model");
}
}  // namespace

const OpDef kOpDef_Raster = {OpType::Raster, "Raster", 0, -1, 1, 1, rasterInModel, nullptr, nullptr, 0, false};

}  // namespace osprey
