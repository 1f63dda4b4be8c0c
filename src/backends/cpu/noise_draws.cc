#include "backends/cpu/noise_draws.h"

// The draws' arithmetic is written once, in the header both backends compile
// (host-and-device inline functions, no CUDA dependency); the CPU calls it here.
#include "backends/cuda/noise_math.h"

namespace ringtrain::backends::cpu {

double NoiseLog(double u) { return gpu::noise::Log(u); }

void NoiseSinCos2Pi(double t, double* s, double* c) { gpu::noise::SinCos2Pi(t, s, c); }

float GaussianDraw(uint64_t key, uint64_t index) { return gpu::noise::GaussianDraw(key, index); }

}  // namespace ringtrain::backends::cpu
