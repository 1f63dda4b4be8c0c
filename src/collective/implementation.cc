#include <cctype>

#include "collective/communicator.h"

namespace ringtrain::collective {

StatusOr<Implementation> ParseImplementation(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "AUTO") return Implementation::kAuto;
  if (upper == "RING") return Implementation::kRing;
  if (upper == "NCCL") return Implementation::kNccl;
  return InvalidArgumentError("unknown communication implementation '" + name +
                              "'; valid values are AUTO, RING and NCCL (case-insensitive)");
}

const char* ImplementationName(Implementation impl) {
  switch (impl) {
    case Implementation::kAuto: return "AUTO";
    case Implementation::kRing: return "RING";
    case Implementation::kNccl: return "NCCL";
  }
  return "UNKNOWN";
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
  }
  return "unknown";
}

}  // namespace ringtrain::collective
