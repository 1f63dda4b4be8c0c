// cuBLAS, loaded on first use (device/cublas_loader.h).
//
// The binary does not link libcublas: linked, its libcublasLt's static initializers cost
// every process start about 0.4 s (the `submit` command, every job a daemon starts, every
// test), although only a worker training on a GPU calls cuBLAS. This file defines the
// cuBLAS entry points ringtrain calls, with the signatures of <cublas_api.h> (the compiler
// checks them against its declarations); the first call dlopens the library and each
// entry forwards to the library's own symbol. TensorFlow's stream executor loads cuBLAS
// the same way.
//
// Without the library every entry returns CUBLAS_STATUS_NOT_INITIALIZED, and
// cublasGetStatusString says which file could not be loaded and why.
#include "device/cublas_loader.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include <cublas_api.h>

namespace ringtrain::device {
namespace {

#define RT_STR2(x) #x
#define RT_STR(x) RT_STR2(x)
constexpr const char* kSoname = "libcublas.so." RT_STR(CUBLAS_VER_MAJOR);

struct Loaded {
  void* handle = nullptr;
  std::string error;  // why handle is null
};

const Loaded& Library() {
  static const Loaded loaded = [] {
    Loaded l;
    // The bare soname first (LD_LIBRARY_PATH, the binary's run path, ld.so.cache), then
    // the file this build found.
    l.handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    const char* e = l.handle == nullptr ? dlerror() : nullptr;
    std::string why = e != nullptr ? e : kSoname;
#if defined(RINGTRAIN_CUBLAS_BUILD_DIR)
    if (l.handle == nullptr) {
      const std::string path = std::string(RINGTRAIN_CUBLAS_BUILD_DIR) + "/" + kSoname;
      l.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (l.handle == nullptr) why += "; nor " + path;
    }
#endif
    if (l.handle == nullptr) {
      l.error = "cuBLAS could not be loaded (" + why + "); install cuBLAS " RT_STR(CUBLAS_VER_MAJOR) +
                std::string(" or add its directory to LD_LIBRARY_PATH");
    }
    return l;
  }();
  return loaded;
}

// The library's symbol `name` as a pointer of the type of `self` (the entry point of the
// same name defined below), or null.
template <typename Fn>
Fn Resolve(const char* name, Fn /*self*/) {
  const Loaded& l = Library();
  if (l.handle == nullptr) return nullptr;
  return reinterpret_cast<Fn>(dlsym(l.handle, name));
}

}  // namespace

bool CublasLoaded() { return Library().handle != nullptr; }

const std::string& CublasLoadError() { return Library().error; }

}  // namespace ringtrain::device

using ringtrain::device::Resolve;

// Each entry resolves its namesake once; a missing library or symbol answers
// CUBLAS_STATUS_NOT_INITIALIZED.
#define RT_CUBLAS_FORWARD(name, params, args)                                  \
  extern "C" cublasStatus_t CUBLASWINAPI name params {                         \
    static const auto fn = Resolve(#name, &name);                              \
    return fn == nullptr ? CUBLAS_STATUS_NOT_INITIALIZED : fn args;            \
  }

RT_CUBLAS_FORWARD(cublasCreate_v2, (cublasHandle_t * handle), (handle))
RT_CUBLAS_FORWARD(cublasDestroy_v2, (cublasHandle_t handle), (handle))
RT_CUBLAS_FORWARD(cublasGetVersion_v2, (cublasHandle_t handle, int* version), (handle, version))
RT_CUBLAS_FORWARD(cublasGetProperty, (libraryPropertyType type, int* value), (type, value))
RT_CUBLAS_FORWARD(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
RT_CUBLAS_FORWARD(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))
RT_CUBLAS_FORWARD(cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode), (handle, mode))
RT_CUBLAS_FORWARD(cublasSetAtomicsMode, (cublasHandle_t handle, cublasAtomicsMode_t mode), (handle, mode))
RT_CUBLAS_FORWARD(cublasSgemm_v2,
                  (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
                   const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C,
                   int ldc),
                  (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))

#undef RT_CUBLAS_FORWARD

extern "C" const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  static const auto fn = Resolve("cublasGetStatusName", &cublasGetStatusName);
  return fn == nullptr ? "CUBLAS_STATUS_NOT_INITIALIZED" : fn(status);
}

extern "C" const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto fn = Resolve("cublasGetStatusString", &cublasGetStatusString);
  return fn == nullptr ? ringtrain::device::CublasLoadError().c_str() : fn(status);
}
