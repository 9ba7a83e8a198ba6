// The SPIR-V of shaders/*.comp, compiled by glslc at build time and embedded by
// embed_spirv.cmake into a generated .cpp of the build tree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace osprey::vulkan {

struct EmbeddedShader {
  const char* name;  // the .comp file's name without extension
  const uint32_t* words;
  size_t wordCount;
};

const std::vector<EmbeddedShader>& embeddedShaders();

}  // namespace osprey::vulkan
