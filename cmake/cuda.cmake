# CUDA, cuBLAS, cuDNN and NCCL detection (included from the top-level CMakeLists.txt).
#
# RINGTRAIN_CUDA: AUTO (default) builds whatever is found, ON fails the configure unless
# all four are found, OFF does not look. Found parts:
#   - CUDA toolkit (with nvcc) + cuBLAS + cuDNN -> the CUDA backend (src/backends/cuda) and the GPU engine:
#     RINGTRAIN_HAVE_CUDA, the CUDA language enabled, RINGTRAIN_CUDNN_INCLUDE_DIR/_LIBRARY.
#   - CUDA toolkit + NCCL -> the NCCL collective backend (src/collective/nccl):
#     RINGTRAIN_HAVE_NCCL, RINGTRAIN_NCCL_INCLUDE_DIR/_LIBRARY.
# Versions for `ringtrain --version`: RINGTRAIN_CUDA_VERSION, RINGTRAIN_CUDNN_VERSION,
# RINGTRAIN_NCCL_VERSION (empty when absent).
#
# Libraries are linked by full path, so CMake's build RPATH lets the binaries find them
# without LD_LIBRARY_PATH. None needs a GPU driver to load: without one, CUDA calls fail
# at run time and ringtrain trains on the CPU. On these machines everything is under
# /usr/local/cuda (the default location when CMake's own search finds nothing).

set_property(CACHE RINGTRAIN_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${RINGTRAIN_CUDA}" _rt_cuda_mode)
if(NOT _rt_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "RINGTRAIN_CUDA must be AUTO, ON or OFF, got '${RINGTRAIN_CUDA}'")
endif()

set(RINGTRAIN_HAVE_CUDA FALSE)
set(RINGTRAIN_HAVE_NCCL FALSE)
set(RINGTRAIN_CUDA_VERSION "")
set(RINGTRAIN_CUDNN_VERSION "")
set(RINGTRAIN_NCCL_VERSION "")

# "MAJOR.MINOR.PATCH" from the #defines `prefix`MAJOR/MINOR/<patch_name> of `header`.
function(_rt_header_version header prefix patch_name out)
  file(STRINGS "${header}" _defs REGEX "^#define ${prefix}(MAJOR|MINOR|${patch_name}) +[0-9]+")
  set(_v "")
  foreach(_part MAJOR MINOR ${patch_name})
    foreach(_line IN LISTS _defs)
      if(_line MATCHES "^#define ${prefix}${_part} +([0-9]+)")
        list(APPEND _v ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endforeach()
  list(JOIN _v "." _v)
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

function(_rt_cuda_fail what)
  if(_rt_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "RINGTRAIN_CUDA=ON but ${what} was not found; install it, point CMake at it, "
                        "or configure with -DRINGTRAIN_CUDA=AUTO or OFF")
  endif()
  message(STATUS "ringtrain: ${what} not found")
endfunction()

if(_rt_cuda_mode STREQUAL "OFF")
  message(STATUS "ringtrain: CUDA off (RINGTRAIN_CUDA=OFF): CPU training, RING collectives")
  return()
endif()

if(NOT DEFINED CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  _rt_cuda_fail("the CUDA toolkit (set CUDAToolkit_ROOT, e.g. /usr/local/cuda)")
  message(STATUS "ringtrain: building without CUDA: CPU training, RING collectives")
  return()
endif()
set(RINGTRAIN_CUDA_VERSION "${CUDAToolkit_VERSION}")
set(_rt_hints ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR} /usr/local/cuda)

# ---- NCCL: in the toolkit on some machines, the system directories on others
# (libnccl-dev), or at NCCL_ROOT / NCCL_HOME.
find_path(RINGTRAIN_NCCL_INCLUDE_DIR nccl.h HINTS $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${NCCL_ROOT} ${_rt_hints}
          ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(RINGTRAIN_NCCL_LIBRARY nccl HINTS $ENV{NCCL_ROOT} $ENV{NCCL_HOME} ${NCCL_ROOT} ${_rt_hints}
             ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
if(RINGTRAIN_NCCL_INCLUDE_DIR AND RINGTRAIN_NCCL_LIBRARY)
  set(RINGTRAIN_HAVE_NCCL TRUE)
  _rt_header_version("${RINGTRAIN_NCCL_INCLUDE_DIR}/nccl.h" "NCCL_" "PATCH" RINGTRAIN_NCCL_VERSION)
  message(STATUS "ringtrain: NCCL ${RINGTRAIN_NCCL_VERSION} (${RINGTRAIN_NCCL_LIBRARY}): the NCCL backend is built")
else()
  _rt_cuda_fail("NCCL (nccl.h and libnccl; set NCCL_ROOT to its install prefix)")
endif()

# ---- The GPU engine: nvcc for the CUDA kernels, cuBLAS, cuDNN (cudnn.h, libcudnn).
find_path(RINGTRAIN_CUDNN_INCLUDE_DIR cudnn_version.h HINTS $ENV{CUDNN_ROOT} ${CUDNN_ROOT} ${_rt_hints}
          ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(RINGTRAIN_CUDNN_LIBRARY cudnn HINTS $ENV{CUDNN_ROOT} ${CUDNN_ROOT} ${_rt_hints}
             ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
if(NOT CUDAToolkit_NVCC_EXECUTABLE OR NOT EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  _rt_cuda_fail("nvcc (the CUDA toolkit's compiler)")
elseif(NOT TARGET CUDA::cublas)
  _rt_cuda_fail("cuBLAS")
elseif(NOT RINGTRAIN_CUDNN_INCLUDE_DIR OR NOT RINGTRAIN_CUDNN_LIBRARY)
  _rt_cuda_fail("cuDNN (cudnn_version.h and libcudnn; set CUDNN_ROOT to its install prefix)")
else()
  if(NOT DEFINED CMAKE_CUDA_COMPILER)
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
  endif()
  if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  # Turing to Hopper as machine code, plus Hopper's PTX for newer GPUs to JIT.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 75-real 80-real 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 does not know that nvcc 13 has C++20; the .cu files need 17
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  _rt_header_version("${RINGTRAIN_CUDNN_INCLUDE_DIR}/cudnn_version.h" "CUDNN_" "PATCHLEVEL" RINGTRAIN_CUDNN_VERSION)
  set(RINGTRAIN_HAVE_CUDA TRUE)
  message(STATUS "ringtrain: CUDA ${RINGTRAIN_CUDA_VERSION} (${CUDAToolkit_NVCC_EXECUTABLE}), cuDNN "
                 "${RINGTRAIN_CUDNN_VERSION} (${RINGTRAIN_CUDNN_LIBRARY}): the GPU engine is built")
endif()
