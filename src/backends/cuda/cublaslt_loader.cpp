// The cuBLASLt entry points the CUDA backend calls, bound to libcublasLt at their first call
// instead of at program start. Linked normally, libcublasLt's start-up touches about 130 MB of
// memory in every process that links Osprey, CPU-only sessions included; loaded here it costs
// nothing until a CUDA session multiplies matrices. The signatures come from cublasLt.h itself
// (a definition that differed from its declaration would not compile).
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace {

// libcublasLt of the major version compiled against: by name (the binary's run path, the
// loader's cache), else from the directory that libcudart was loaded from.
void* cublasLtLibrary() {
  static void* handle = [] {
    const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    Dl_info info;
    if (!h && dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) && info.dli_fname) {
      std::string dir = info.dli_fname;
      dir = dir.substr(0, dir.find_last_of('/') + 1);
      h = dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    return h;
  }();
  return handle;
}

template <class Fn>
Fn resolve(Fn, const char* symbol) {
  void* lib = cublasLtLibrary();
  return lib ? reinterpret_cast<Fn>(dlsym(lib, symbol)) : nullptr;
}

}  // namespace

// Each entry point resolves its symbol once; a missing library reads as "not initialized".
#define OSPREY_CUBLASLT_FORWARD(name, params, args)                 \
  extern "C" cublasStatus_t CUBLASWINAPI name params {              \
    static const auto real = resolve(&name, #name);                 \
    return real ? real args : CUBLAS_STATUS_NOT_INITIALIZED;        \
  }

OSPREY_CUBLASLT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
OSPREY_CUBLASLT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmul,
                        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                         cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                         const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                         const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSize, cudaStream_t stream),
                        (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                         workspaceSize, stream))
OSPREY_CUBLASLT_FORWARD(cublasLtMatrixLayoutCreate,
                        (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld),
                        (layout, type, rows, cols, ld))
OSPREY_CUBLASLT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
OSPREY_CUBLASLT_FORWARD(cublasLtMatrixLayoutSetAttribute,
                        (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                         size_t size),
                        (layout, attr, buf, size))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulDescCreate,
                        (cublasLtMatmulDesc_t * desc, cublasComputeType_t computeType, cudaDataType_t scaleType),
                        (desc, computeType, scaleType))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulDescSetAttribute,
                        (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t size),
                        (desc, attr, buf, size))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                        (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                         size_t size),
                        (pref, attr, buf, size))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                        (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                         cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                         cublasLtMatmulPreference_t pref, int requestedAlgoCount,
                         cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount),
                        (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requestedAlgoCount, heuristicResultsArray,
                         returnAlgoCount))
OSPREY_CUBLASLT_FORWARD(cublasLtMatmulAlgoCheck,
                        (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
                         cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                         const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result),
                        (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, algo, result))

// The version names the algorithms a tuning cache records; 0 when the library is absent.
extern "C" size_t CUBLASWINAPI cublasLtGetVersion(void) {
  static const auto real = resolve(&cublasLtGetVersion, "cublasLtGetVersion");
  return real ? real() : 0;
}
