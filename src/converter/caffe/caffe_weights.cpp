// The .caffemodel reader (caffe_weights.h).
#include "converter/caffe/caffe_weights.h"

#include "converter/proto_wire.h"

namespace osprey::caffe {

namespace {

using wire::Ctx;
using wire::Field;
using wire::FieldSpec;
using wire::MessageSpec;
using wire::Reader;

constexpr FieldSpec kNetFields[] = {{100, "layer", wire::kLen}, {2, "layers", wire::kLen}};
constexpr MessageSpec kNet = {"NetParameter", kNetFields, 2};
constexpr FieldSpec kLayerFields[] = {{1, "name", wire::kLen}, {7, "blobs", wire::kLen}};
constexpr MessageSpec kLayer = {"LayerParameter", kLayerFields, 2};
constexpr FieldSpec kV1LayerFields[] = {{4, "name", wire::kLen}, {6, "blobs", wire::kLen}};
constexpr MessageSpec kV1Layer = {"V1LayerParameter", kV1LayerFields, 2};
constexpr FieldSpec kBlobFields[] = {{1, "num", wire::kVarint},         {2, "channels", wire::kVarint},
                                     {3, "height", wire::kVarint},      {4, "width", wire::kVarint},
                                     {5, "data", wire::kFixed32, true}, {7, "shape", wire::kLen},
                                     {8, "double_data", wire::kFixed64, true}};
constexpr MessageSpec kBlob = {"BlobProto", kBlobFields, 7};
constexpr FieldSpec kShapeFields[] = {{1, "dim", wire::kVarint, true}};
constexpr MessageSpec kShape = {"BlobShape", kShapeFields, 1};
constexpr size_t kMaxElements = size_t{1} << 32;  // what a wire of this size cannot describe anyway

Status parseBlob(Ctx& c, size_t begin, size_t end, Blob* blob) {
  Reader r(c, kBlob, begin, end);
  Field f;
  int64_t legacy[4] = {0, 0, 0, 0};
  bool hasShape = false;
  std::vector<double> doubles;
  for (;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) break;
    const uint32_t n = f.spec->number;
    if (n >= 1 && n <= 4) {
      legacy[n - 1] = static_cast<int64_t>(static_cast<int32_t>(f.bits));
    } else if (n == 5) {
      OSPREY_RETURN_IF_ERROR(wire::forEachScalar(c, f, [&](uint64_t bits) { blob->data.push_back(wire::bitsToFloat(bits)); }));
    } else if (n == 8) {
      OSPREY_RETURN_IF_ERROR(wire::forEachScalar(c, f, [&](uint64_t bits) { doubles.push_back(wire::bitsToDouble(bits)); }));
    } else if (n == 7) {
      hasShape = true;
      blob->shape.clear();
      OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) {
        Reader sr(c, kShape, b, e);
        Field d;
        for (;;) {
          OSPREY_RETURN_IF_ERROR(sr.next(&d));
          if (!d.spec) return Status::ok();
          OSPREY_RETURN_IF_ERROR(wire::forEachScalar(c, d, [&](uint64_t v) { blob->shape.push_back(static_cast<int64_t>(v)); }));
        }
      }));
    }
  }
  if (blob->data.empty() && !doubles.empty()) blob->data.assign(doubles.begin(), doubles.end());
  if (!hasShape) {  // legacy 4-D blobs (num, channels, height, width); none given: a list
    blob->shape.assign(legacy, legacy + 4);
    if (legacy[0] == 0 && legacy[1] == 0 && legacy[2] == 0 && legacy[3] == 0)
      blob->shape = {static_cast<int64_t>(blob->data.size())};
  }
  size_t elements = 1;
  for (int64_t d : blob->shape) {
    if (d < 0 || static_cast<uint64_t>(d) > kMaxElements)
      return c.malformed("blob dimension " + std::to_string(d) + " is out of range", begin);
    elements *= static_cast<size_t>(d);
    if (elements > kMaxElements) return c.malformed("blob has too many elements", begin);
  }
  if (elements != blob->data.size())
    return c.malformed("blob of shape " + shapeToString(blob->shape) + " holds " + std::to_string(blob->data.size()) +
                           " values",
                       begin);
  return Status::ok();
}

Status parseLayer(Ctx& c, const MessageSpec& spec, size_t begin, size_t end, LayerBlobs* out) {
  Reader r(c, spec, begin, end);
  Field f;
  std::string name;
  std::vector<Blob> blobs;
  for (;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) break;
    if (f.spec->number == spec.fields[0].number) {
      name = c.str(f.begin, f.end);
    } else {
      Blob blob;
      OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) { return parseBlob(c, b, e, &blob); }));
      blobs.push_back(std::move(blob));
    }
  }
  if (!blobs.empty()) (*out)[name] = std::move(blobs);
  return Status::ok();
}

}  // namespace

Status parseWeights(const uint8_t* bytes, size_t size, const std::string& source, LayerBlobs* out) {
  out->clear();
  const std::string what = "Caffe weights " + source;
  Ctx c{bytes, size, what.c_str(), 16};
  Reader r(c, kNet, 0, size);
  Field f;
  for (;;) {
    OSPREY_RETURN_IF_ERROR(r.next(&f));
    if (!f.spec) return Status::ok();
    const MessageSpec& spec = f.spec->number == 100 ? kLayer : kV1Layer;
    OSPREY_RETURN_IF_ERROR(wire::nested(c, f, [&](size_t b, size_t e) { return parseLayer(c, spec, b, e, out); }));
  }
}

}  // namespace osprey::caffe
