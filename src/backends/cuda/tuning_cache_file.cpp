#include "backends/cuda/tuning_cache_file.h"

#include <cstring>

namespace osprey::cuda {

namespace {
constexpr char kHeader[] = "osprey-cuda-tuning 1\n";
constexpr size_t kMaxText = 512, kMaxValueBytes = 512;
constexpr uint32_t kMaxEntries = 1u << 20;
constexpr char kHex[] = "0123456789abcdef";

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case too: the writer never makes it, so the bytes would not round-trip
}

bool decodeHex(const char* text, size_t length, std::vector<uint8_t>* out) {
  if (length == 0 || length % 2 != 0 || length / 2 > kMaxValueBytes) return false;
  out->resize(length / 2);
  for (size_t i = 0; i < length; i += 2) {
    const int hi = hexDigit(text[i]), lo = hexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i / 2] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return true;
}
}  // namespace

bool validTuningCacheText(const std::string& text, bool key) {
  if (text.empty() || text.size() > kMaxText) return false;
  for (char c : text)
    if (c < ' ' || c > '~' || (key && c == ' ')) return false;
  return true;
}

bool parseTuningCacheFile(const uint8_t* data, size_t size, TuningCacheFile* out) {
  const char* text = reinterpret_cast<const char*>(data);
  const size_t headerBytes = sizeof(kHeader) - 1;
  if (size < headerBytes || std::memcmp(text, kHeader, headerBytes) != 0) return false;
  TuningCacheFile file;
  size_t at = headerBytes;
  bool first = true;
  while (at < size) {
    const void* newline = std::memchr(text + at, '\n', size - at);
    if (!newline) return false;  // a last line without its '\n': truncated
    const size_t end = static_cast<size_t>(static_cast<const char*>(newline) - text);
    std::string line(text + at, end - at);
    at = end + 1;
    if (first) {
      if (!validTuningCacheText(line, false)) return false;
      file.identity = std::move(line);
      first = false;
      continue;
    }
    const size_t space = line.find(' ');
    if (space == std::string::npos) return false;
    std::string key = line.substr(0, space);
    std::vector<uint8_t> value;
    if (!validTuningCacheText(key, true) || !decodeHex(line.data() + space + 1, line.size() - space - 1, &value))
      return false;
    if (!file.entries.empty() && !(file.entries.rbegin()->first < key)) return false;  // unsorted or repeated
    if (file.entries.size() >= kMaxEntries) return false;
    file.entries.emplace_hint(file.entries.end(), std::move(key), std::move(value));
  }
  if (first) return false;  // no identity line
  *out = std::move(file);
  return true;
}

std::vector<uint8_t> serializeTuningCacheFile(const TuningCacheFile& file) {
  std::string text = kHeader;
  text += file.identity;
  text += '\n';
  for (const auto& [key, value] : file.entries) {
    text += key;
    text += ' ';
    for (uint8_t b : value) {
      text += kHex[b >> 4];
      text += kHex[b & 15];
    }
    text += '\n';
  }
  return std::vector<uint8_t>(text.begin(), text.end());
}

}  // namespace osprey::cuda
