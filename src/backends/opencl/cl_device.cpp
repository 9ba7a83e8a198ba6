#include "backends/opencl/cl_device.h"

#include <cstdlib>

namespace osprey::opencl {

namespace {

std::string infoString(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <class T>
T infoValue(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

std::string platformName(cl_platform_id p) {
  size_t n = 0;
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetPlatformInfo(p, CL_PLATFORM_NAME, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

DeviceFacts factsOf(cl_platform_id p, cl_device_id d) {
  DeviceFacts f;
  f.platform = p;
  f.device = d;
  f.platformName = platformName(p);
  f.name = infoString(d, CL_DEVICE_NAME);
  f.vendor = infoString(d, CL_DEVICE_VENDOR);
  f.version = infoString(d, CL_DEVICE_VERSION);
  f.driverVersion = infoString(d, CL_DRIVER_VERSION);
  f.type = infoValue<cl_device_type>(d, CL_DEVICE_TYPE);
  f.fp16 = infoString(d, CL_DEVICE_EXTENSIONS).find("cl_khr_fp16") != std::string::npos;
  f.computeUnits = infoValue<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  f.maxWorkGroupSize = infoValue<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(f.maxWorkItemSizes), f.maxWorkItemSizes, nullptr);
  f.localMemBytes = infoValue<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  f.globalCacheBytes = infoValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  f.globalMemBytes = infoValue<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  f.maxAllocBytes = infoValue<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  f.imageSupport = infoValue<cl_bool>(d, CL_DEVICE_IMAGE_SUPPORT) == CL_TRUE;
  f.image2dMaxWidth = infoValue<size_t>(d, CL_DEVICE_IMAGE2D_MAX_WIDTH);
  f.image2dMaxHeight = infoValue<size_t>(d, CL_DEVICE_IMAGE2D_MAX_HEIGHT);
  cl_uint alignBits = infoValue<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
  if (alignBits >= 8) f.baseAddressAlignBytes = alignBits / 8;
  return f;
}

// An environment choice matches by index ("1") or by a case-sensitive name substring.
bool matches(const char* choice, int index, const std::string& name) {
  if (!choice || !*choice) return true;
  char* end = nullptr;
  long n = std::strtol(choice, &end, 10);
  if (end && *end == '\0') return n == index;
  return name.find(choice) != std::string::npos;
}

}  // namespace

std::string DeviceFacts::typeName() const {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

std::string DeviceFacts::summary() const {
  auto mb = [](cl_ulong b) { return std::to_string(b / (1024 * 1024)) + " MB"; };
  return "platform " + std::to_string(platformIndex) + " '" + platformName + "', device " +
         std::to_string(deviceIndex) + ": " + typeName() + ", vendor " + vendor + ", " + version + ", fp16 " +
         (fp16 ? "yes" : "no") + ", " + std::to_string(computeUnits) + " compute units, work-group " +
         std::to_string(maxWorkGroupSize) + " (items " + std::to_string(maxWorkItemSizes[0]) + "x" +
         std::to_string(maxWorkItemSizes[1]) + "x" + std::to_string(maxWorkItemSizes[2]) + "), local " +
         std::to_string(localMemBytes / 1024) + " KB, cache " + std::to_string(globalCacheBytes / 1024) +
         " KB, global " + mb(globalMemBytes) + ", max alloc " + mb(maxAllocBytes) + ", image2d " +
         (imageSupport ? std::to_string(image2dMaxWidth) + "x" + std::to_string(image2dMaxHeight)
                       : std::string("none"));
}

std::vector<DeviceFacts> listDevices() {
  std::vector<DeviceFacts> out;
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  for (cl_uint p = 0; p < np; ++p) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devices(nd);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devices.data(), nullptr);
    for (cl_uint d = 0; d < nd; ++d) {
      DeviceFacts f = factsOf(platforms[p], devices[d]);
      f.platformIndex = static_cast<int>(p);
      f.deviceIndex = static_cast<int>(d);
      out.push_back(std::move(f));
    }
  }
  return out;
}

Status selectDevice(const std::string& platform, const std::string& device, DeviceFacts* out) {
  std::vector<DeviceFacts> all = listDevices();
  if (all.empty()) return Status::unsupported("OpenCL: no platform with a device is installed");
  const char* platformChoice = platform.empty() ? nullptr : platform.c_str();
  const char* deviceChoice = device.empty() ? nullptr : device.c_str();
  std::vector<DeviceFacts> candidates;
  for (auto& f : all)
    if (matches(platformChoice, f.platformIndex, f.platformName) && matches(deviceChoice, f.deviceIndex, f.name))
      candidates.push_back(f);
  if (candidates.empty()) {
    std::string known;
    for (auto& f : all) known += "\n  " + f.summary();
    return Status::invalidArgument("OpenCL: no device matches platform '" + platform + "' device '" + device +
                                   "' (OpenCLOptions::platform, ::device); devices:" + known);
  }
  *out = candidates[0];
  if (!platformChoice && !deviceChoice)
    for (auto& f : candidates)
      if (f.type & CL_DEVICE_TYPE_GPU) {
        *out = f;
        break;
      }
  return Status::ok();
}

}  // namespace osprey::opencl
