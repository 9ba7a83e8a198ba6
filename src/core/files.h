// Whole files in and out of memory, with errors that name the file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "osprey/status.h"

namespace osprey {

Status readFile(const std::string& path, std::vector<uint8_t>* out);
Status writeFile(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace osprey
