// Runtime() for a build without the CUDA toolkit: nothing to ask.
#include "device/device.h"

namespace ringtrain::device {

const RuntimeInfo& Runtime() {
  static const RuntimeInfo info = [] {
    RuntimeInfo r;
    r.unavailable_reason = "built without CUDA";
    return r;
  }();
  return info;
}

std::string CublasRuntimeVersion() { return ""; }

}  // namespace ringtrain::device
