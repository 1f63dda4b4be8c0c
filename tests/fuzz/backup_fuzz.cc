// The backup reader, for one fixed identity (a small Adam model): the input is the
// metadata JSON and the weights file, split by its first two bytes (the metadata's
// length). Any bytes either decode or give one line (DATA_LOSS for a corrupted
// backup, FAILED_PRECONDITION for another job's); what decodes re-encodes to a backup
// that decodes to the same state.
#include <cstring>
#include <string>

#include "backup/backup.h"
#include "fuzz_target.h"

using namespace ringtrain;

namespace {

backup::BackupIdentity Identity() {
  backup::BackupIdentity id;
  id.job_fingerprint = "0123456789abcdef";
  id.num_workers = 2;
  id.steps_per_epoch = 5;
  id.optimizer_name = "adam";
  id.params = {{"dense/kernel", {3, 2}, 0}, {"dense/bias", {2}, 6}};
  return id;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t meta = std::min<size_t>(size - 2, static_cast<size_t>(data[0]) | static_cast<size_t>(data[1]) << 8);
  backup::EncodedBackup encoded;
  encoded.metadata.assign(reinterpret_cast<const char*>(data) + 2, meta);
  encoded.weights.assign(reinterpret_cast<const char*>(data) + 2 + meta, size - 2 - meta);
  static const backup::BackupIdentity id = Identity();
  auto state = backup::DecodeBackup(id, encoded);
  if (!state.ok()) {
    FUZZ_CHECK(state.status().code() == Code::kDataLoss || state.status().code() == Code::kFailedPrecondition);
    FUZZ_CHECK(!state.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(state->params.size() == id.num_params());
  auto again = backup::EncodeBackup(id, *state);
  FUZZ_CHECK(again.ok());
  auto state2 = backup::DecodeBackup(id, *again);
  FUZZ_CHECK(state2.ok());
  FUZZ_CHECK(state2->global_step == state->global_step);
  FUZZ_CHECK(state2->params == state->params);
  FUZZ_CHECK(state2->optimizer_slots == state->optimizer_slots);
  FUZZ_CHECK(state2->optimizer_iterations == state->optimizer_iterations);
  FUZZ_CHECK(state2->history == state->history);
  return 0;
}
