// cuBLAS is loaded with dlopen on its first call (device/cublas_loader.cc), not at process
// start: code calls the cuBLAS API of <cublas_v2.h> as usual and links ringtrain_device
// instead of libcublas. Built only with the GPU engine.
#pragma once

#include <string>

namespace ringtrain::device {

// Loads cuBLAS if it is not loaded yet; false when it cannot be (CublasLoadError says why).
bool CublasLoaded();
// "" once loaded; else one line naming the library, the loader's reason and what to do.
const std::string& CublasLoadError();

}  // namespace ringtrain::device
