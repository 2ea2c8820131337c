# Toolchain, dependencies and the one helper every kernel version uses.

find_program(CUTELAB_CCACHE ccache)
if(CUTELAB_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CUTELAB_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CUTELAB_CCACHE})
endif()

find_package(CUDAToolkit 12.4 REQUIRED)
# CMake 3.25 does not know nvcc's C++20 flag (added in 3.26); nvcc 12+ accepts -std=c++20.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
if(CUTELAB_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
find_package(Threads REQUIRED)

# CUTLASS/CuTe headers: the nvidia-cutlass wheel installed by scripts/bootstrap, unless the
# user points CUTELAB_CUTLASS_DIR at a checkout of their own (its include/ and tools/util/include).
set(CUTELAB_CUTLASS_DIR "${PROJECT_SOURCE_DIR}/.deps/python/cutlass_library/source"
    CACHE PATH "CUTLASS source tree (holding include/ and tools/util/include/)")
if(NOT EXISTS "${CUTELAB_CUTLASS_DIR}/include/cute/tensor.hpp")
  message(FATAL_ERROR "CuTe headers not found under CUTELAB_CUTLASS_DIR=${CUTELAB_CUTLASS_DIR}. "
                      "Run scripts/bootstrap, or pass -DCUTELAB_CUTLASS_DIR=<your CUTLASS checkout>.")
endif()
add_library(cutelab_cutlass INTERFACE)
target_include_directories(cutelab_cutlass SYSTEM INTERFACE
  "${CUTELAB_CUTLASS_DIR}/include" "${CUTELAB_CUTLASS_DIR}/tools/util/include"
  # Host (non-nvcc) translation units that include CUTLASS headers need CCCL with CUDA 13.
  "${CUDAToolkit_INCLUDE_DIRS}/cccl")

# FlashInfer's headers (a baseline MLA kernel): the flashinfer-python wheel unpacked by
# scripts/bootstrap. OFF builds the lab without that baseline.
option(CUTELAB_WITH_FLASHINFER "Build the FlashInfer MLA decode baseline (headers from PyPI's flashinfer-python)" ON)
set(CUTELAB_FLASHINFER_DIR "${PROJECT_SOURCE_DIR}/.deps/flashinfer-0.7.2.post1"
    CACHE PATH "FlashInfer headers unpacked by scripts/bootstrap (include/, cutlass/, cccl/)")
if(CUTELAB_WITH_FLASHINFER AND CUTELAB_BUILD_KERNELS
   AND NOT EXISTS "${CUTELAB_FLASHINFER_DIR}/include/flashinfer/attention/mla_hopper.cuh")
  message(FATAL_ERROR "FlashInfer headers not found under CUTELAB_FLASHINFER_DIR=${CUTELAB_FLASHINFER_DIR}. "
                      "Run scripts/bootstrap, or configure with -DCUTELAB_WITH_FLASHINFER=OFF.")
endif()

# Kernel versions that a later version of the same design beats on every case (kept in the tree
# as the steps before, with their devlog entries; kernels/CMakeLists.txt names them). OFF keeps
# builds and CI short; ON builds and tests them too.
option(CUTELAB_SUPERSEDED_KERNELS "Also build the superseded kernel versions (the steps before)" OFF)

# One token per -gencode: CMake de-duplicates repeated options, which would drop the second
# bare "-gencode" and leave nvcc with a stray argument.
set(CUTELAB_CUDA_ARCH_FLAGS_SM90A -gencode=arch=compute_90a,code=sm_90a)
set(CUTELAB_CUDA_ARCH_FLAGS_PORTABLE -gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90a,code=sm_90a)

set(CUTELAB_CUDA_COMMON_FLAGS --expt-relaxed-constexpr --expt-extended-lambda -lineinfo
    -Xcompiler=-fno-strict-aliasing)
option(CUTELAB_PTXAS_VERBOSE "Print ptxas resource usage (-Xptxas -v) for kernels" OFF)
if(CUTELAB_PTXAS_VERBOSE)
  list(APPEND CUTELAB_CUDA_COMMON_FLAGS -Xptxas=-v)
endif()

# A version's instantiations/*.cu as one compile unit. Each nvcc unit parses CuTe/CUTLASS three
# times (cudafe++, cicc per architecture, the host compiler) before it compiles its few kernels:
# on a 2-core machine one unit per version took 89 s where six rmsnorm units took 256 s, 124 s
# where four CUTLASS GEMM units took 340 s. With many cores one unit per file builds in parallel
# and rebuilds only the file edited. Same kernels either way (explicit instantiations only).
set(CUTELAB_BATCH_INSTANTIATIONS AUTO CACHE STRING
    "Compile each kernel version's instantiations/*.cu as one unit: ON, OFF, or AUTO (ON with <= 4 cores)")
set_property(CACHE CUTELAB_BATCH_INSTANTIATIONS PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${CUTELAB_BATCH_INSTANTIATIONS}" cutelab_batch)
if(NOT cutelab_batch MATCHES "^(AUTO|ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
  message(FATAL_ERROR "CUTELAB_BATCH_INSTANTIATIONS=${CUTELAB_BATCH_INSTANTIATIONS}: expected AUTO, ON or OFF")
endif()
set(cutelab_batch_why "CUTELAB_BATCH_INSTANTIATIONS=${CUTELAB_BATCH_INSTANTIATIONS}")
if(cutelab_batch STREQUAL "AUTO")
  # nproc counts the cores this process may use (taskset, cgroups), which is what a build gets.
  execute_process(COMMAND nproc OUTPUT_VARIABLE cutelab_cores OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE cutelab_nproc_status)
  if(cutelab_nproc_status EQUAL 0 AND cutelab_cores MATCHES "^[0-9]+$" AND cutelab_cores LESS_EQUAL 4)
    set(CUTELAB_BATCH_INSTANTIATIONS_EFFECTIVE ON)
  else()
    set(CUTELAB_BATCH_INSTANTIATIONS_EFFECTIVE OFF)
  endif()
  set(cutelab_batch_why "AUTO, ${cutelab_cores} cores")
elseif(cutelab_batch)  # a CMake boolean, checked above
  set(CUTELAB_BATCH_INSTANTIATIONS_EFFECTIVE ON)
else()
  set(CUTELAB_BATCH_INSTANTIATIONS_EFFECTIVE OFF)
endif()
message(STATUS "cutelab: instantiation units batched per kernel version: "
               "${CUTELAB_BATCH_INSTANTIATIONS_EFFECTIVE} (${cutelab_batch_why})")

# Every kernel version is one object library added to the cutelab_kernels shared library.
#   cutelab_add_kernel(NAME <target> ARCH sm90a|portable SOURCES <files...> [PTXAS_OPTIONS <options...>])
# PTXAS_OPTIONS: ptxas options of that version alone (each measured against the default build of the
# same source; the version's README says by how much).
set_property(GLOBAL PROPERTY CUTELAB_KERNEL_OBJECTS "")
function(cutelab_add_kernel)
  cmake_parse_arguments(K "" "NAME;ARCH" "SOURCES;PTXAS_OPTIONS" ${ARGN})
  if(NOT K_NAME OR NOT K_SOURCES)
    message(FATAL_ERROR "cutelab_add_kernel needs NAME and SOURCES")
  endif()
  if(CUTELAB_BATCH_INSTANTIATIONS_EFFECTIVE)
    set(instantiations ${K_SOURCES})
    list(FILTER instantiations INCLUDE REGEX "(^|/)instantiations/[^/]+\\.cu$")
    list(LENGTH instantiations n_instantiations)
    if(n_instantiations GREATER 1)
      list(REMOVE_ITEM K_SOURCES ${instantiations})
      set(content "// Generated by cutelab_add_kernel (CUTELAB_BATCH_INSTANTIATIONS): ${K_NAME}'s instantiations.\n")
      foreach(src IN LISTS instantiations)
        cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" OUTPUT_VARIABLE abs)
        string(APPEND content "#include \"${abs}\"\n")
      endforeach()
      set(batched "${CMAKE_CURRENT_BINARY_DIR}/batched_instantiations/${K_NAME}.cu")
      file(CONFIGURE OUTPUT "${batched}" CONTENT "${content}" @ONLY)  # rewritten only when it changes
      list(APPEND K_SOURCES "${batched}")
    endif()
  endif()
  if(K_ARCH STREQUAL "portable")
    set(arch_flags ${CUTELAB_CUDA_ARCH_FLAGS_PORTABLE})
  elseif(K_ARCH STREQUAL "sm90a" OR NOT K_ARCH)
    set(arch_flags ${CUTELAB_CUDA_ARCH_FLAGS_SM90A})
  else()
    message(FATAL_ERROR "cutelab_add_kernel(${K_NAME}): unknown ARCH '${K_ARCH}'")
  endif()
  add_library(${K_NAME} OBJECT ${K_SOURCES})
  if(K_ARCH STREQUAL "sm90a" OR NOT K_ARCH)
    # Hopper kernels: serialized wgmma fails the build (cmake/ptxas-guard); spills are warned about.
    set(launcher "${PROJECT_SOURCE_DIR}/cmake/ptxas-guard")
    if(CUTELAB_CCACHE)
      list(APPEND launcher "${CUTELAB_CCACHE}")
    endif()
    set_target_properties(${K_NAME} PROPERTIES CUDA_COMPILER_LAUNCHER "${launcher}")
    target_compile_options(${K_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=--warn-on-spills>)
  endif()
  target_link_libraries(${K_NAME} PRIVATE cutelab_runtime cutelab_cutlass)
  target_include_directories(${K_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/kernels)
  set_target_properties(${K_NAME} PROPERTIES CUDA_ARCHITECTURES OFF CUDA_SEPARABLE_COMPILATION OFF)
  target_compile_options(${K_NAME} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:${arch_flags} ${CUTELAB_CUDA_COMMON_FLAGS}>)
  foreach(option IN LISTS K_PTXAS_OPTIONS)
    target_compile_options(${K_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=${option}>)
  endforeach()
  set_property(GLOBAL APPEND PROPERTY CUTELAB_KERNEL_OBJECTS ${K_NAME})
endfunction()
