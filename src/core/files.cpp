#include "core/files.h"

#include <fstream>

namespace osprey {

Status readFile(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return Status::notFound("cannot open '" + path + "'");
  // Sized once: growing the vector while reading held up to twice the file at a time.
  const std::streamoff size = f.tellg();
  if (size < 0 || !f.seekg(0)) return Status::invalidArgument("cannot read '" + path + "'");
  out->resize(static_cast<size_t>(size));
  if (size > 0 && !f.read(reinterpret_cast<char*>(out->data()), size))
    return Status::invalidArgument("cannot read '" + path + "'");
  return Status::ok();
}

Status writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  if (!f) return Status::invalidArgument("cannot write '" + path + "'");
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) return Status::invalidArgument("cannot write '" + path + "'");
  return Status::ok();
}

}  // namespace osprey
