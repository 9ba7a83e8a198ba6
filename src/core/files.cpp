#include "core/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace osprey {

Status readFile(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::notFound("cannot open '" + path + "'");
  // Sized once: growing the vector while reading held up to twice the file at a time.
  const std::streamoff size = f.seekg(0, std::ios::end) ? std::streamoff(f.tellg()) : -1;
  if (size < 0 || !f.seekg(0)) {
    // A pipe has no size: read it to its end.
    f.clear();
    out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (f.bad()) return Status::invalidArgument("cannot read '" + path + "'");
    return Status::ok();
  }
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

Status writeFileAtomically(const std::string& path, const std::vector<uint8_t>& bytes) {
  // A name no other process or thread writes: the pid and a per-process count.
  static std::atomic<uint64_t> count{0};
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(count++);
  OSPREY_RETURN_IF_ERROR(writeFile(tmp, bytes));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::invalidArgument("cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
  return Status::ok();
}

Status MappedFile::open(const std::string& path, std::shared_ptr<const MappedFile>* out) {
  // Looked at before it is opened: opening a named pipe would block for a writer, and closing it
  // again would lose what the writer sent for the reader that follows.
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) return Status::notFound("cannot open '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(before.st_mode)) return Status::invalidArgument("cannot map '" + path + "': not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::notFound("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalidArgument("cannot map '" + path + "': not a regular file");
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::outOfMemory("cannot map '" + path + "' (" + std::to_string(file->size_) + " bytes): " + why);
    }
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file
  *out = std::move(file);
  return Status::ok();
}

Status mapOrReadFile(const std::string& path, FileBytes* out) {
  *out = FileBytes();
  std::shared_ptr<const MappedFile> file;
  const Status mapped = MappedFile::open(path, &file);
  if (mapped) {
    out->data = file->data(), out->size = file->size(), out->mapped = true;
    out->holder = std::move(file);
    return Status::ok();
  }
  if (mapped.code() == StatusCode::NotFound) return mapped;
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  OSPREY_RETURN_IF_ERROR(readFile(path, bytes.get()));
  out->data = bytes->data(), out->size = bytes->size();
  out->holder = std::move(bytes);
  return Status::ok();
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::releasePages() const {
  // Clean file pages: dropped from this process, read again from the file on the next access
  // (which maps back the whole page-cache folio around the byte read).
  if (data_) madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED);
}

}  // namespace osprey
