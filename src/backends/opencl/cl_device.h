// OpenCL platform and device discovery: what `osprey backends` lists and how a session picks
// its device (OSPREY_OPENCL_PLATFORM / OSPREY_OPENCL_DEVICE: an index or a name substring).
#pragma once
#include <CL/cl.h>

#include <string>
#include <vector>

#include "osprey/status.h"

namespace osprey::opencl {

struct DeviceFacts {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  int platformIndex = 0, deviceIndex = 0;
  std::string platformName, name, vendor, version, driverVersion;
  cl_device_type type = 0;
  bool fp16 = false;
  cl_uint computeUnits = 0;
  size_t maxWorkGroupSize = 0;
  size_t maxWorkItemSizes[3] = {0, 0, 0};
  cl_ulong localMemBytes = 0, globalCacheBytes = 0, globalMemBytes = 0, maxAllocBytes = 0;
  size_t image2dMaxWidth = 0, image2dMaxHeight = 0;
  bool imageSupport = false;
  cl_uint baseAddressAlignBytes = 128;

  std::string typeName() const;  // "GPU", "CPU", "accelerator"
  std::string summary() const;   // one line of the facts above
};

// Every device of every platform (empty when no platform is installed).
std::vector<DeviceFacts> listDevices();
// The device chosen by `platform` and `device` (each an index or a name substring; empty: any).
// With both empty: the first GPU, else the first device.
Status selectDevice(const std::string& platform, const std::string& device, DeviceFacts* out);

}  // namespace osprey::opencl
