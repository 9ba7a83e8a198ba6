// The --vulkan-cache file's reader: every truncation and foreign file is a cold start, never a
// crash. (VulkanRuntime.PipelineCacheFile tests its use.)
#include <gtest/gtest.h>

#include "backends/vulkan/pipeline_cache_file.h"

namespace osprey::test {
namespace {

using vulkan::PipelineCacheFile;
using vulkan::PipelineKey;

PipelineCacheFile sampleFile() {
  PipelineCacheFile f;
  f.pipelines.push_back(PipelineKey{"conv_fp16", 4, {3, 64, -1, 7}});
  f.pipelines.push_back(PipelineKey{"unary", 2, {}});
  for (int i = 0; i < 40; ++i) f.driverData.push_back(static_cast<uint8_t>(i * 7));
  return f;
}

TEST(VulkanPipelineCacheFile, RoundTrip) {
  const PipelineCacheFile f = sampleFile();
  const std::vector<uint8_t> bytes = vulkan::serializePipelineCacheFile(f);
  PipelineCacheFile back;
  ASSERT_TRUE(vulkan::parsePipelineCacheFile(bytes.data(), bytes.size(), &back));
  ASSERT_EQ(back.pipelines.size(), 2u);
  EXPECT_EQ(back.pipelines[0].shader, "conv_fp16");
  EXPECT_EQ(back.pipelines[0].bindings, 4u);
  EXPECT_EQ(back.pipelines[0].specialization, (std::vector<int32_t>{3, 64, -1, 7}));
  EXPECT_EQ(back.pipelines[0].id(), "conv_fp16,3,64,-1,7");
  EXPECT_EQ(back.pipelines[1].id(), "unary");
  EXPECT_EQ(back.driverData, f.driverData);
}

TEST(VulkanPipelineCacheFile, TruncatedOrForeignFilesAreColdStarts) {
  const std::vector<uint8_t> bytes = vulkan::serializePipelineCacheFile(sampleFile());
  PipelineCacheFile out;
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(vulkan::parsePipelineCacheFile(bytes.data(), n, &out)) << n;
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(vulkan::parsePipelineCacheFile(longer.data(), longer.size(), &out));
  // A bare VkPipelineCache blob (the format before the key list): header length, version, vendor.
  const uint8_t driverBlob[] = {32, 0, 0, 0, 1, 0, 0, 0, 0xde, 0x10, 0, 0};
  EXPECT_FALSE(vulkan::parsePipelineCacheFile(driverBlob, sizeof(driverBlob), &out));
  std::vector<uint8_t> hugeName = bytes;
  hugeName[12 + 4] = 0xff;  // the first shader name's length
  EXPECT_FALSE(vulkan::parsePipelineCacheFile(hugeName.data(), hugeName.size(), &out));
}

}  // namespace
}  // namespace osprey::test
