// Whole files in and out of memory, with errors that name the file.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "osprey/status.h"

namespace osprey {

Status readFile(const std::string& path, std::vector<uint8_t>* out);
Status writeFile(const std::string& path, const std::vector<uint8_t>& bytes);
// Written beside `path` under a temporary name, then renamed over it: a concurrent reader sees
// the old file or the new one, never half of one.
Status writeFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes);

// A whole file mapped read-only. Its pages come from the file and can go back to it:
// releasePages() drops the resident ones, and a later read faults them in again from the file
// (the same bytes while the file is unchanged), which a copy on the heap cannot do. The file
// must not be truncated or rewritten while it is mapped.
class MappedFile {
 public:
  static Status open(const std::string& path, std::shared_ptr<const MappedFile>* out);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  void releasePages() const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A file's bytes: mapped where it is a regular file, else (a pipe, a device) read whole.
struct FileBytes {
  std::shared_ptr<const void> holder;  // keeps them: the MappedFile, or the vector read
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool mapped = false;  // holder is a MappedFile
  std::shared_ptr<const MappedFile> mapping() const {
    return mapped ? std::static_pointer_cast<const MappedFile>(holder) : nullptr;
  }
};
Status mapOrReadFile(const std::string& path, FileBytes* out);

}  // namespace osprey
