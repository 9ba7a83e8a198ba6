// The kernel sources compiled into the binary: one entry per src/backends/opencl/cl/*.cl file,
// generated at build time by embed_cl.cmake (never checked in).
#pragma once
#include <string>
#include <vector>

namespace osprey::opencl {

struct EmbeddedProgram {
  const char* name;  // the .cl file's name without extension
  std::string source;
};

const std::vector<EmbeddedProgram>& embeddedPrograms();

}  // namespace osprey::opencl
