// The trainer's state as a backup::TrainState: taking it, restoring it, and making it
// equal on every worker after a (re)formation of the ring.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fingerprint.h"
#include "common/logging.h"
#include "train/trainer.h"

namespace ringtrain::train {

backup::BackupIdentity Trainer::Identity() const {
  backup::BackupIdentity id;
  id.job_fingerprint = job_.TrajectoryFingerprint();
  id.num_workers = options_.num_workers;
  id.steps_per_epoch = steps_per_epoch_;
  id.optimizer_name = optimizer_->name();
  for (const auto& p : model_->param_infos()) id.params.push_back({p.name, p.shape, p.offset});
  return id;
}

backup::TrainState Trainer::Snapshot() const {
  backup::TrainState s;
  const size_t n = model_->num_params();
  s.global_step = global_step_;
  s.params.assign(model_->params(), model_->params() + n);
  // Slots cover the trainable weights (a prefix of params); a backup stores them padded
  // with zeros to every weight, the layout backups have always had.
  // Before the first update the slots are not allocated yet: Build gives them Keras'
  // initial values (not always zeros: Adagrad's accumulator starts at 0.1).
  optimizer_->Build(model_->num_trainable());
  for (const auto& [name, buffer] : optimizer_->state()) {
    std::vector<float> slot(n, 0.0f);
    std::copy(buffer->begin(), buffer->begin() + static_cast<std::ptrdiff_t>(std::min(buffer->size(), n)), slot.begin());
    s.optimizer_slots.emplace_back(name, std::move(slot));
  }
  s.optimizer_iterations = optimizer_->iterations();
  const MetricSums epoch = EpochSums();
  s.epoch_loss_sum = epoch.loss_sum;
  s.epoch_examples = epoch.examples;
  s.epoch_metric_sums = epoch.metric_sums;
  // The field older backups had: the first argmax accuracy's hits.
  for (size_t m = 0; m < objective_->metrics().size(); ++m) {
    if (objective_->argmax_accuracy(m)) {
      s.epoch_correct = std::llround(s.epoch_metric_sums[static_cast<size_t>(objective_->first_sum(m))]);
      break;
    }
  }
  s.history = history_json_;
  return s;
}

Status Trainer::Restore(const backup::TrainState& s) {
  const size_t n = model_->num_params();
  if (s.params.size() != n) {
    return InvalidArgumentError("the state has " + std::to_string(s.params.size()) + " parameters, the model " +
                                std::to_string(n));
  }
  auto slots = optimizer_->state();
  if (s.optimizer_slots.size() != slots.size()) {
    return InvalidArgumentError("the state has " + std::to_string(s.optimizer_slots.size()) +
                                " optimizer slot(s), the " + optimizer_->name() + " optimizer " +
                                std::to_string(slots.size()));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    if (s.optimizer_slots[i].first != slots[i].first || s.optimizer_slots[i].second.size() != n) {
      return InvalidArgumentError("the state's optimizer slot '" + s.optimizer_slots[i].first +
                                  "' does not fit the " + optimizer_->name() + " optimizer's '" + slots[i].first + "'");
    }
  }
  if (!s.epoch_metric_sums.empty() && s.epoch_metric_sums.size() != static_cast<size_t>(objective_->num_sums())) {
    return InvalidArgumentError("the state has " + std::to_string(s.epoch_metric_sums.size()) +
                                " metric sums but the job's metrics take " + std::to_string(objective_->num_sums()) +
                                "; resume with the job's original \"metrics\" or delete the backup directory");
  }
  // Parsed before anything changes, so that a bad history leaves the trainer as it was.
  nlohmann::json history_json = s.history.is_array() ? s.history : nlohmann::json::array();
  std::vector<EpochResult> history;
  try {
    for (const auto& h : history_json) {
      EpochResult r;
      r.epoch = h.value("epoch", 0);
      r.steps = steps_per_epoch_;
      r.loss = h.value("loss", 0.0);
      for (const auto& m : objective_->metrics()) {
        if (h.contains(m->name())) r.metrics.emplace_back(m->name(), h.value(m->name(), 0.0));
        if (h.contains("val_" + m->name())) r.val_metrics.emplace_back(m->name(), h.value("val_" + m->name(), 0.0));
      }
      r.accuracy = AccuracyOf(r.metrics);
      r.images_per_sec = h.value("images_per_sec", 0.0);
      r.learning_rate = h.value("lr", 0.0);
      r.step_ms = h.value("step_ms", 0.0);
      r.comm_wait_share = h.value("comm_wait_share", 0.0);
      r.input_wait_share = h.value("input_wait_share", 0.0);
      r.has_val = h.contains("val_loss");
      r.val_loss = h.value("val_loss", 0.0);
      r.val_accuracy = AccuracyOf(r.val_metrics);
      history.push_back(r);
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("the state's history is not a list of epoch records (") + e.what() +
                                "); restore from another backup or delete the backup directory to start over");
  }
  std::memcpy(model_->params(), s.params.data(), n * sizeof(float));
  const size_t trainable = model_->num_trainable();
  for (size_t i = 0; i < slots.size(); ++i) {
    const std::vector<float>& saved = s.optimizer_slots[i].second;
    slots[i].second->assign(saved.begin(), saved.begin() + static_cast<std::ptrdiff_t>(trainable));
  }
  optimizer_->set_iterations(s.optimizer_iterations);
  global_step_ = s.global_step;
  carried_ = MetricSums{s.epoch_loss_sum, s.epoch_metric_sums, s.epoch_examples};
  if (carried_.metric_sums.empty()) {
    // A backup from before configurable metrics counted the argmax accuracy's hits only.
    carried_.metric_sums.assign(static_cast<size_t>(objective_->num_sums()), 0.0);
    for (size_t m = 0; m < objective_->metrics().size(); ++m) {
      if (!objective_->argmax_accuracy(m)) continue;
      carried_.metric_sums[static_cast<size_t>(objective_->first_sum(m))] = static_cast<double>(s.epoch_correct);
      carried_.metric_sums[static_cast<size_t>(objective_->first_sum(m)) + 1] = static_cast<double>(s.epoch_examples);
    }
  }
  pending_ = MetricSums();
  history_json_ = std::move(history_json);
  history_ = std::move(history);
  if (history_file_) RT_RETURN_IF_ERROR(history_file_->Reset(history_json_));
  return Status::Ok();
}

MetricSums Trainer::EpochSums() const {
  MetricSums epoch = carried_;
  epoch += pending_;
  epoch.metric_sums.resize(static_cast<size_t>(objective_->num_sums()), 0.0);  // empty counts as zeros
  return epoch;
}

uint64_t Trainer::StateFingerprint() const {
  optimizer_->Build(model_->num_trainable());  // as Snapshot() does
  uint64_t h = FingerprintWords(model_->params(), model_->num_params() * sizeof(float));
  for (const auto& [name, buffer] : optimizer_->state()) {
    h = FingerprintWords(name.data(), name.size(), h);
    h = FingerprintWords(buffer->data(), buffer->size() * sizeof(float), h);
  }
  const MetricSums epoch = EpochSums();
  const int64_t counts[3] = {global_step_, optimizer_->iterations(), epoch.examples};
  h = FingerprintWords(counts, sizeof(counts), h);
  h = FingerprintWords(&epoch.loss_sum, sizeof(epoch.loss_sum), h);
  h = FingerprintWords(epoch.metric_sums.data(), epoch.metric_sums.size() * sizeof(double), h);
  const std::string history = history_json_.dump();
  return FingerprintWords(history.data(), history.size(), h);
}

StatusOr<bool> Trainer::SyncState(collective::Communicator* comm) {
  const uint64_t fingerprint = StateFingerprint();
  RT_ASSIGN_OR_RETURN(const FurthestWorker furthest, FindFurthestWorker(comm, global_step_, fingerprint));
  const int root = furthest.rank;
  if (furthest.all_same_state) {
    // Every worker already holds the same state (a fresh start: the same job and seed
    // build the same initial model everywhere), so sending it would change no bit. Only
    // what Restore does besides the state itself.
    carried_ = EpochSums();
    pending_ = MetricSums();
    if (comm->rank() != root && history_file_) RT_RETURN_IF_ERROR(history_file_->Reset(history_json_));
    RT_LOG(INFO) << "training state already the same on every worker at step " << furthest.step << " (fingerprint "
                 << FingerprintHex(fingerprint) << "): nothing to send";
    return false;
  }

  // The root's state, encoded as a backup (checksummed), travels as raw bytes.
  backup::EncodedBackup enc;
  int64_t sizes[2] = {0, 0};
  if (comm->rank() == root) {
    RT_ASSIGN_OR_RETURN(enc, backup::EncodeBackup(Identity(), Snapshot()));
    sizes[0] = static_cast<int64_t>(enc.weights.size());
    sizes[1] = static_cast<int64_t>(enc.metadata.size());
  }
  RT_RETURN_IF_ERROR(comm->Broadcast(sizes, 2, root).WithContext("broadcasting the training state"));
  const size_t wbytes = static_cast<size_t>(sizes[0]), mbytes = static_cast<size_t>(sizes[1]);
  std::vector<uint8_t> buf(wbytes + mbytes);
  if (comm->rank() == root) {
    std::memcpy(buf.data(), enc.weights.data(), wbytes);
    std::memcpy(buf.data() + wbytes, enc.metadata.data(), mbytes);
  }
  RT_RETURN_IF_ERROR(comm->Broadcast(buf.data(), buf.size(), root).WithContext("broadcasting the training state"));
  if (comm->rank() != root) {
    const char* bytes = reinterpret_cast<const char*>(buf.data());
    enc.weights.assign(bytes, wbytes);
    enc.metadata.assign(bytes + wbytes, mbytes);
    auto state = backup::DecodeBackup(Identity(), enc);
    if (!state.ok()) return state.status().WithContext("the training state received from rank " + std::to_string(root));
    RT_RETURN_IF_ERROR(Restore(*state));
  }
  RT_LOG(INFO) << "training state synchronised from rank " << root << " at step " << furthest.step;
  return comm->rank() != root;
}

}  // namespace ringtrain::train
