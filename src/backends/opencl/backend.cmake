# The OpenCL backend: on by default when the OpenCL headers and ICD loader are found.
# Kernels are the .cl files under cl/; at build time they become string literals in a
# generated .cpp (build tree only), so the binary carries its kernel sources.
find_package(OpenCL QUIET)
if(OpenCL_FOUND)
  option(OSPREY_OPENCL "Build the OpenCL backend" ON)
else()
  option(OSPREY_OPENCL "Build the OpenCL backend" OFF)
endif()

if(OSPREY_OPENCL AND NOT OpenCL_FOUND)
  message(WARNING "OSPREY_OPENCL is ON but no OpenCL headers/library were found: OpenCL backend off "
                  "(install ocl-icd-opencl-dev opencl-headers)")
  set(OSPREY_OPENCL OFF CACHE BOOL "Build the OpenCL backend" FORCE)
endif()

if(OSPREY_OPENCL)
  message(STATUS "OpenCL backend: on (${OpenCL_LIBRARIES})")
  set(OSPREY_WITH_OPENCL ON)
  set(OSPREY_OPENCL_DIR ${CMAKE_CURRENT_LIST_DIR})
  file(GLOB OSPREY_OPENCL_CL_FILES CONFIGURE_DEPENDS ${OSPREY_OPENCL_DIR}/cl/*.cl)
  set(OSPREY_OPENCL_EMBEDDED ${OSPREY_GEN_DIR}/opencl_programs.cpp)
  add_custom_command(
    OUTPUT ${OSPREY_OPENCL_EMBEDDED}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${OSPREY_OPENCL_EMBEDDED} -DSOURCE_DIR=${OSPREY_OPENCL_DIR}/cl
            -P ${OSPREY_OPENCL_DIR}/embed_cl.cmake
    DEPENDS ${OSPREY_OPENCL_CL_FILES} ${OSPREY_OPENCL_DIR}/embed_cl.cmake
    COMMENT "Embedding OpenCL kernels")
  file(GLOB_RECURSE OSPREY_OPENCL_SOURCES CONFIGURE_DEPENDS ${OSPREY_OPENCL_DIR}/*.cpp)
  add_library(osprey_backend_opencl OBJECT ${OSPREY_OPENCL_SOURCES} ${OSPREY_OPENCL_EMBEDDED})
  target_link_libraries(osprey_backend_opencl PUBLIC osprey_core OpenCL::OpenCL)
  # OpenCL 1.2 API only, so the same binary runs on PoCL, NVIDIA, AMD and Intel platforms.
  target_compile_definitions(osprey_backend_opencl PUBLIC CL_TARGET_OPENCL_VERSION=120)
  list(APPEND OSPREY_BACKEND_OBJECTS $<TARGET_OBJECTS:osprey_backend_opencl>)
  list(APPEND OSPREY_BACKEND_LIBS OpenCL::OpenCL)
  set_property(SOURCE src/runtime/backend_registry.cpp APPEND PROPERTY COMPILE_DEFINITIONS OSPREY_WITH_OPENCL)
else()
  message(STATUS "OpenCL backend: off (no OpenCL headers/ICD loader found, or OSPREY_OPENCL=OFF)")
  set(OSPREY_WITH_OPENCL OFF)
endif()
