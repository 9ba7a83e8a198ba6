// The --cuda-cache file's reader: truncated, reordered or foreign files are untuned starts,
// never a crash; what it accepts writes back to the same bytes. (CudaTuning tests its use.)
#include <gtest/gtest.h>

#include <string>

#include "backends/cuda/tuning_cache_file.h"

namespace osprey::test {
namespace {

using cuda::TuningCacheFile;

TuningCacheFile sampleFile() {
  TuningCacheFile f;
  f.identity = "NVIDIA H200 sm_90 cudart 13000 cublasLt 130000 cudnn 91000";
  f.entries["conv1,64,56,56,64,1,1,1,0,0,1,1,1,1,1hab"] = {0, 0, 0, 0, 1, 0, 0, 0};
  f.entries["lt,4096,768,768"] = {0x00, 0x7f, 0x80, 0xff};
  return f;
}

bool parses(const std::string& text, TuningCacheFile* out) {
  return cuda::parseTuningCacheFile(reinterpret_cast<const uint8_t*>(text.data()), text.size(), out);
}

TEST(CudaTuningCacheFile, RoundTripsExactly) {
  const std::vector<uint8_t> bytes = cuda::serializeTuningCacheFile(sampleFile());
  TuningCacheFile back;
  ASSERT_TRUE(cuda::parseTuningCacheFile(bytes.data(), bytes.size(), &back));
  EXPECT_EQ(back.identity, sampleFile().identity);
  EXPECT_EQ(back.entries, sampleFile().entries);
  EXPECT_EQ(cuda::serializeTuningCacheFile(back), bytes);
  const std::string text(bytes.begin(), bytes.end());
  EXPECT_NE(text.find("lt,4096,768,768 007f80ff\n"), std::string::npos) << text;
}

TEST(CudaTuningCacheFile, EveryTruncationIsRefusedOrWhole) {
  const std::vector<uint8_t> bytes = cuda::serializeTuningCacheFile(sampleFile());
  TuningCacheFile out;
  for (size_t n = 0; n < bytes.size(); ++n) {
    // A cut at a line's end leaves a shorter valid file (the entries before it); anywhere else
    // the reader refuses it.
    const bool lineEnd = n > 0 && bytes[n - 1] == '\n';
    const bool ok = cuda::parseTuningCacheFile(bytes.data(), n, &out);
    if (!lineEnd) {
      EXPECT_FALSE(ok) << n;
    }
    if (ok) {
      EXPECT_LT(out.entries.size(), 2u) << n;
    }
  }
}

TEST(CudaTuningCacheFile, RefusesWhatWouldNotRoundTrip) {
  TuningCacheFile out;
  const std::string head = "osprey-cuda-tuning 1\nGPU\n";
  EXPECT_TRUE(parses(head + "a 00\nb 01\n", &out));
  EXPECT_EQ(out.entries.size(), 2u);
  EXPECT_FALSE(parses(head + "b 00\na 01\n", &out));     // unsorted
  EXPECT_FALSE(parses(head + "a 00\na 01\n", &out));     // repeated
  EXPECT_FALSE(parses(head + "a 0A\n", &out));           // upper-case hex
  EXPECT_FALSE(parses(head + "a 0\n", &out));            // odd digits
  EXPECT_FALSE(parses(head + "a \n", &out));             // no value
  EXPECT_FALSE(parses(head + "a 00 \n", &out));          // trailing space
  EXPECT_FALSE(parses(head + "a\t 00\n", &out));         // control byte in a key
  EXPECT_FALSE(parses("osprey-cuda-tuning 2\nGPU\n", &out));  // another version
  EXPECT_FALSE(parses("osprey-cuda-tuning 1\n", &out));       // no identity
  EXPECT_FALSE(parses("osprey-cuda-tuning 1\n\n", &out));     // empty identity
  EXPECT_FALSE(parses(head + std::string(600, 'k') + " 00\n", &out));  // key too long
}

TEST(CudaTuningCacheFile, KeysAndIdentitiesAreCheckedBeforeWriting) {
  EXPECT_TRUE(cuda::validTuningCacheText("lt,1,2,3", true));
  EXPECT_FALSE(cuda::validTuningCacheText("lt 1", true));
  EXPECT_TRUE(cuda::validTuningCacheText("NVIDIA H200 sm_90", false));
  EXPECT_FALSE(cuda::validTuningCacheText("two\nlines", false));
  EXPECT_FALSE(cuda::validTuningCacheText("", false));
}

}  // namespace
}  // namespace osprey::test
