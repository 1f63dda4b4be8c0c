#include "kernels/avx512_microkernel.h"

namespace ringtrain::kernels::avx512 {
namespace {

template <int MR>
MicroKernelFn PickForRows(int nv) {
  switch (nv) {
    case 1: return &MicroKernel<MR, 1>;
    case 2: return &MicroKernel<MR, 2>;
    case 3: return &MicroKernel<MR, 3>;
    default: return &MicroKernel<MR, 4>;
  }
}

}  // namespace

MicroKernelFn PickMicroKernel(int mr, int nv) {
  switch (mr) {
    case 1: return PickForRows<1>(nv);
    case 2: return PickForRows<2>(nv);
    case 3: return PickForRows<3>(nv);
    case 4: return PickForRows<4>(nv);
    case 5: return PickForRows<5>(nv);
    default: return PickForRows<6>(nv);
  }
}

}  // namespace ringtrain::kernels::avx512
