// Picks the implementation once per process: AVX-512 where the CPU has it, unless
// forced portable (SetForcePortable: the executable does so for RINGTRAIN_KERNELS=portable).
#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "kernels/impl.h"
#include "kernels/thread_pool.h"

namespace ringtrain::kernels {
namespace {

std::atomic<int> g_force_portable{-1};  // -1: not forced either way

bool CpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

std::mutex g_pool_mu;
std::shared_ptr<ThreadPool> g_pool;  // guarded by g_pool_mu

}  // namespace

bool UseAvx512() {
  static const bool available = CpuHasAvx512();
  const int forced = g_force_portable.load(std::memory_order_relaxed);
  return forced == 1 ? false : available;
}

void SetForcePortable(bool force) { g_force_portable.store(force ? 1 : -1); }

const char* Implementation() { return UseAvx512() ? "avx512" : "portable"; }

std::shared_ptr<ThreadPool> Pool() {
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (!g_pool) g_pool = std::make_shared<ThreadPool>(1);
  return g_pool;
}

void SetNumThreads(int n) {
  n = n < 1 ? 1 : n;
  // OpenBLAS splits its reductions differently for different thread counts, so the
  // portable path keeps it on one thread: the bits must not depend on the machine's cores.
  openblas_set_num_threads(1);
  std::lock_guard<std::mutex> lock(g_pool_mu);
  if (!g_pool || g_pool->size() != n) g_pool = std::make_shared<ThreadPool>(n);
}

int NumThreads() { return Pool()->size(); }

void ParallelForRaw(int64_t n, ThreadPool::RangeFn fn, void* ctx) { Pool()->ParallelFor(n, fn, ctx); }

#define RINGTRAIN_DISPATCH(call) return UseAvx512() ? avx512::call : portable::call

void DenseForward(const float* x, int batch, int in, const float* w, int units, const float* bias, bool relu,
                  float* y) {
  RINGTRAIN_DISPATCH(DenseForward(x, batch, in, w, units, bias, relu, y));
}
void DenseWeightGrad(const float* x, const float* d, int batch, int in, int units, float* dw) {
  RINGTRAIN_DISPATCH(DenseWeightGrad(x, d, batch, in, units, dw));
}
void DenseInputGrad(const float* d, const float* w, int batch, int in, int units, float* dx, float* scratch) {
  RINGTRAIN_DISPATCH(DenseInputGrad(d, w, batch, in, units, dx, scratch));
}
void ConvForward(const Window& g, int filters, const float* x, int batch, const float* w, const float* bias,
                 bool relu, float* y, float* scratch) {
  RINGTRAIN_DISPATCH(ConvForward(g, filters, x, batch, w, bias, relu, y, scratch));
}
void ConvFilterGrad(const Window& g, int filters, const float* x, const float* y, const float* dy, int batch,
                    bool relu, float* dw, float* db, float* dpre, float* scratch) {
  RINGTRAIN_DISPATCH(ConvFilterGrad(g, filters, x, y, dy, batch, relu, dw, db, dpre, scratch));
}
void ConvFilterGradAfterForward(const Window& g, int filters, const float* x, const float* y, const float* dy,
                                int batch, bool relu, float* dw, float* db, float* dpre, float* scratch) {
  if (UseAvx512()) {
    avx512::ConvFilterGradImpl(g, filters, x, y, dy, batch, relu, dw, db, dpre, scratch, /*padded_ready=*/true);
    return;
  }
  portable::ConvFilterGrad(g, filters, x, y, dy, batch, relu, dw, db, dpre, scratch);
}
void MaxPoolForward(const Window& g, const float* x, int batch, float* y) {
  RINGTRAIN_DISPATCH(MaxPoolForward(g, x, batch, y));
}
void MaxPoolBackward(const Window& g, const float* x, const float* y, const float* dy, int batch, float* dx) {
  RINGTRAIN_DISPATCH(MaxPoolBackward(g, x, y, dy, batch, dx));
}

#undef RINGTRAIN_DISPATCH

}  // namespace ringtrain::kernels
