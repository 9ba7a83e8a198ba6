# The Vulkan backend: on by default when the Vulkan headers and loader (find_package(Vulkan))
# and glslc are found. Shaders are the GLSL compute shaders under shaders/; at build time glslc
# compiles each to SPIR-V and embed_spirv.cmake writes the words into a generated .cpp (build
# tree only), so the binary carries its shaders and needs no compiler at run time.
find_package(Vulkan QUIET)
find_program(OSPREY_GLSLC glslc)
if(Vulkan_FOUND AND OSPREY_GLSLC)
  option(OSPREY_VULKAN "Build the Vulkan backend" ON)
else()
  option(OSPREY_VULKAN "Build the Vulkan backend" OFF)
endif()

if(OSPREY_VULKAN AND NOT (Vulkan_FOUND AND OSPREY_GLSLC))
  message(WARNING "OSPREY_VULKAN is ON but the Vulkan headers/loader or glslc were not found: Vulkan backend off "
                  "(install libvulkan-dev glslc)")
  set(OSPREY_VULKAN OFF CACHE BOOL "Build the Vulkan backend" FORCE)
endif()

if(OSPREY_VULKAN)
  message(STATUS "Vulkan backend: on (${Vulkan_LIBRARIES}, ${OSPREY_GLSLC})")
  set(OSPREY_WITH_VULKAN ON)
  set(OSPREY_VULKAN_DIR ${CMAKE_CURRENT_LIST_DIR})
  set(OSPREY_SPIRV_DIR ${OSPREY_GEN_DIR}/spirv)
  file(GLOB OSPREY_VULKAN_SHADERS CONFIGURE_DEPENDS ${OSPREY_VULKAN_DIR}/shaders/*.comp)
  file(GLOB OSPREY_VULKAN_SHADER_INCLUDES CONFIGURE_DEPENDS ${OSPREY_VULKAN_DIR}/shaders/*.glsl)
  set(OSPREY_SPIRV_FILES)
  # Each shader is compiled twice from the one source: fp32 storage (name.spv) and, with
  # -DOSP_FP16, float16_t storage of its float tensors (name_fp16.spv, BackendConfig precision Low).
  # Shaders whose arithmetic type is AFLOAT (common.glsl) get a third, name_fp16a.spv, that also
  # multiplies in fp16 (-DOSP_FP16_MATH; devices with shaderFloat16). Shaders that reduce over a
  # workgroup (group_reduce.glsl) get an _sg twin of each, reducing with subgroup arithmetic.
  foreach(shader IN LISTS OSPREY_VULKAN_SHADERS)
    get_filename_component(name ${shader} NAME_WE)
    file(READ ${shader} source)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${shader})
    # Each variant: its file name suffix, then its defines, split by '+'.
    set(variants "+" "_fp16+-DOSP_FP16")
    string(FIND "${source}" "AFLOAT" arithmetic)
    if(NOT arithmetic EQUAL -1)
      list(APPEND variants "_fp16a+-DOSP_FP16+-DOSP_FP16_MATH")
    endif()
    string(FIND "${source}" "group_reduce.glsl" reduces)
    if(NOT reduces EQUAL -1)
      list(APPEND variants "_sg+-DOSP_SUBGROUPS" "_fp16_sg+-DOSP_FP16+-DOSP_SUBGROUPS")
    endif()
    foreach(variant IN LISTS variants)
      string(FIND "${variant}" "+" split)
      string(SUBSTRING "${variant}" 0 ${split} suffix)
      math(EXPR split "${split} + 1")
      string(SUBSTRING "${variant}" ${split} -1 defines)
      string(REPLACE "+" ";" defines "${defines}")
      set(spv ${OSPREY_SPIRV_DIR}/${name}${suffix}.spv)
      add_custom_command(
        OUTPUT ${spv}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${OSPREY_SPIRV_DIR}
        COMMAND ${OSPREY_GLSLC} --target-env=vulkan1.1 -O ${defines} -I ${OSPREY_VULKAN_DIR}/shaders -o ${spv} ${shader}
        DEPENDS ${shader} ${OSPREY_VULKAN_SHADER_INCLUDES}
        COMMENT "Compiling Vulkan shader ${name}.comp (${name}${suffix})")
      list(APPEND OSPREY_SPIRV_FILES ${spv})
    endforeach()
  endforeach()
  set(OSPREY_VULKAN_EMBEDDED ${OSPREY_GEN_DIR}/vulkan_shaders.cpp)
  add_custom_command(
    OUTPUT ${OSPREY_VULKAN_EMBEDDED}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${OSPREY_VULKAN_EMBEDDED} -DSPIRV_DIR=${OSPREY_SPIRV_DIR}
            -P ${OSPREY_VULKAN_DIR}/embed_spirv.cmake
    DEPENDS ${OSPREY_SPIRV_FILES} ${OSPREY_VULKAN_DIR}/embed_spirv.cmake
    COMMENT "Embedding Vulkan SPIR-V")
  file(GLOB_RECURSE OSPREY_VULKAN_SOURCES CONFIGURE_DEPENDS ${OSPREY_VULKAN_DIR}/*.cpp)
  add_library(osprey_backend_vulkan OBJECT ${OSPREY_VULKAN_SOURCES} ${OSPREY_VULKAN_EMBEDDED})
  target_link_libraries(osprey_backend_vulkan PUBLIC osprey_core Vulkan::Vulkan)
  # Vulkan structs are zero-initialised as {VK_STRUCTURE_TYPE_...}, which -Wextra reports.
  if(NOT MSVC)
    target_compile_options(osprey_backend_vulkan PRIVATE -Wno-missing-field-initializers)
  endif()
  list(APPEND OSPREY_BACKEND_OBJECTS $<TARGET_OBJECTS:osprey_backend_vulkan>)
  list(APPEND OSPREY_BACKEND_LIBS Vulkan::Vulkan)
  set_property(SOURCE src/runtime/backend_registry.cpp APPEND PROPERTY COMPILE_DEFINITIONS OSPREY_WITH_VULKAN)
else()
  message(STATUS "Vulkan backend: off (no Vulkan headers/loader or glslc found, or OSPREY_VULKAN=OFF)")
  set(OSPREY_WITH_VULKAN OFF)
endif()
