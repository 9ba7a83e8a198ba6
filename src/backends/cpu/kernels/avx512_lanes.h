// Lane masks shared by the AVX-512 kernel files (each compiled with -mavx512f; include only there).
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace osprey {
namespace {

// The first n of 16 lanes (none for n <= 0, all for n >= 16).
inline __mmask16 firstLanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1);
}

}  // namespace
}  // namespace osprey
