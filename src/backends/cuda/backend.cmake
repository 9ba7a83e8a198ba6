# The CUDA backend: on by default when nvcc, the CUDA toolkit (cudart, cuBLASLt) and cuDNN are
# found. Builds sm_90 SASS plus compute_90 PTX unless CMAKE_CUDA_ARCHITECTURES says otherwise.
# .cu files hold kernels and their launchers only (no Osprey headers), so nvcc never compiles the
# C++20 core; executions live in .cpp files.
include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
endif()
check_language(CUDA)
find_package(CUDAToolkit QUIET)
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include/x86_64-linux-gnu /usr/include)
find_library(CUDNN_LIBRARY cudnn
  HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu)

set(OSPREY_CUDA_TOOLCHAIN_FOUND OFF)
if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublasLt AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
  set(OSPREY_CUDA_TOOLCHAIN_FOUND ON)
endif()
option(OSPREY_CUDA "Build the CUDA backend" ${OSPREY_CUDA_TOOLCHAIN_FOUND})

if(OSPREY_CUDA AND NOT OSPREY_CUDA_TOOLCHAIN_FOUND)
  message(WARNING "OSPREY_CUDA is ON but nvcc / CUDA toolkit / cuBLASLt / cuDNN were not all found "
                  "(nvcc: ${CMAKE_CUDA_COMPILER}, cudnn.h: ${CUDNN_INCLUDE_DIR}, libcudnn: ${CUDNN_LIBRARY}): CUDA backend off")
  set(OSPREY_CUDA OFF CACHE BOOL "Build the CUDA backend" FORCE)
endif()

if(OSPREY_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  # Targets that link CUDA objects (osprey, the tests) would otherwise ask for CUDA20, which
  # CMake 3.25 cannot spell for nvcc; the .cu files need C++17 only.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, arch ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${CUDNN_LIBRARY})")
  set(OSPREY_WITH_CUDA ON)
  set(OSPREY_CUDA_DIR ${CMAKE_CURRENT_LIST_DIR})
  file(GLOB_RECURSE OSPREY_CUDA_SOURCES CONFIGURE_DEPENDS ${OSPREY_CUDA_DIR}/*.cpp ${OSPREY_CUDA_DIR}/*.cu)
  add_library(osprey_backend_cuda OBJECT ${OSPREY_CUDA_SOURCES})
  target_include_directories(osprey_backend_cuda PUBLIC ${CUDNN_INCLUDE_DIR})
  # cuBLASLt is not linked: cublaslt_loader.cpp opens it at the first matrix multiplication.
  target_link_libraries(osprey_backend_cuda PUBLIC osprey_core CUDA::cudart ${CUDNN_LIBRARY} ${CMAKE_DL_LIBS})
  set_target_properties(osprey_backend_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
  # The directory's warning flags (add_compile_options) are for the host compiler: keep them off nvcc.
  get_target_property(OSPREY_CUDA_INHERITED_OPTIONS osprey_backend_cuda COMPILE_OPTIONS)
  set(OSPREY_CUDA_HOST_OPTIONS)
  foreach(opt IN LISTS OSPREY_CUDA_INHERITED_OPTIONS)
    list(APPEND OSPREY_CUDA_HOST_OPTIONS "$<$<COMPILE_LANGUAGE:CXX>:${opt}>")
  endforeach()
  set_target_properties(osprey_backend_cuda PROPERTIES COMPILE_OPTIONS "${OSPREY_CUDA_HOST_OPTIONS}")
  target_compile_options(osprey_backend_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wno-unused-parameter>)
  list(APPEND OSPREY_BACKEND_OBJECTS $<TARGET_OBJECTS:osprey_backend_cuda>)
  list(APPEND OSPREY_BACKEND_LIBS CUDA::cudart ${CUDNN_LIBRARY} ${CMAKE_DL_LIBS})
  set_property(SOURCE src/runtime/backend_registry.cpp APPEND PROPERTY COMPILE_DEFINITIONS OSPREY_WITH_CUDA)
else()
  message(STATUS "CUDA backend: off (no nvcc / CUDA toolkit / cuDNN found, or OSPREY_CUDA=OFF)")
  set(OSPREY_WITH_CUDA OFF)
endif()
