// What the trainer does between epochs: the epoch's global metrics, validation
// (validation_freq), the history record, TensorBoard scalars and the model checkpoint;
// and the evaluation of data.eval that validation and Evaluate share.
#include <algorithm>
#include <filesystem>

#include "backup/backup.h"
#include "checkpoint/safetensors.h"
#include "common/logging.h"
#include "env/storage_error.h"
#include "nn/losses/loss.h"
#include "train/trainer.h"
#include "train/step_observer.h"

namespace ringtrain::train {
namespace {

Status TensorBoardError(const Status& s) { return env::StorageError(s, "tensorboard_dir", "tensorboard_dir"); }

}  // namespace

Status Trainer::EndEpoch(collective::Communicator* comm, int epoch, const EpochTiming& timing, EpochLine* line) {
  // The epoch's metrics over the global batch, as Keras reports them under this strategy.
  auto reduced = ReduceMetrics(comm);
  if (!reduced.ok()) return reduced.status().WithContext("epoch " + std::to_string(epoch));
  const MetricSums totals = *reduced;
  carried_ = MetricSums();
  EpochResult r;
  r.epoch = epoch;
  r.steps = steps_per_epoch_;
  r.seconds = timing.seconds;
  r.loss = totals.loss_sum / static_cast<double>(totals.examples);
  r.metrics = MetricValues(totals.metric_sums);
  r.accuracy = AccuracyOf(r.metrics);
  r.images_per_sec = static_cast<double>(timing.steps_run) * job_.batch_size_per_worker * comm->size() / timing.seconds;
  r.learning_rate = timing.learning_rate;
  r.step_ms = timing.seconds * 1000.0 / timing.steps_run;
  r.comm_wait_share = timing.seconds > 0 ? timing.comm_wait_seconds / timing.seconds : 0.0;
  r.input_wait_share = timing.seconds > 0 ? timing.input_wait_seconds / timing.seconds : 0.0;
  // Validation runs on every worker (a collective) after the epoch's last update. It
  // only reads the weights and draws no random numbers, so training continues exactly
  // as without it.
  if (has_eval_ && job_.ValidateAfterEpoch(epoch)) {
    auto val = EvaluateShards(comm);
    if (!val.ok()) return val.status().WithContext("validation after epoch " + std::to_string(epoch));
    r.has_val = true;
    r.val_loss = val->loss;
    r.val_accuracy = val->accuracy;
    r.val_metrics = val->metrics;
  }
  history_.push_back(r);
  for (StepObserver* o : options_.observers) o->OnEpoch(r);
  // Keras' history keys: "loss", each metric's name, and "val_" before them.
  nlohmann::json record = {{"epoch", epoch},
                           {"loss", r.loss},
                           {"images_per_sec", r.images_per_sec},
                           {"lr", r.learning_rate},
                           {"step_ms", r.step_ms},
                           {"comm_wait_share", r.comm_wait_share},
                           {"input_wait_share", r.input_wait_share}};
  for (const auto& [name, value] : r.metrics) record[name] = value;
  if (r.has_val) {
    record["val_loss"] = r.val_loss;
    for (const auto& [name, value] : r.val_metrics) record["val_" + name] = value;
  }
  history_json_.push_back(record);
  line->seconds = r.seconds;
  line->loss = r.loss;
  line->metrics = r.metrics;
  line->images_per_sec = r.images_per_sec;
  line->learning_rate = r.learning_rate;
  line->has_val = r.has_val;
  line->val_loss = r.val_loss;
  line->val_metrics = r.val_metrics;
  if (history_file_) RT_RETURN_IF_ERROR(history_file_->AppendEpoch(record));
  RT_RETURN_IF_ERROR(WriteTensorBoard(r));
  if (options_.is_chief && !job_.model_checkpoint.empty()) {
    RT_RETURN_IF_ERROR(engine_->StoreToHost().WithContext("copying the model back for model_checkpoint"));
    RT_RETURN_IF_ERROR(WriteModelCheckpoint(epoch));
  }
  return Status::Ok();
}

Status Trainer::WriteTensorBoard(const EpochResult& r) {
  if (!tb_train_) return Status::Ok();
  // Keras' TensorBoard callback: epoch summaries at step = the 0-based epoch index.
  const int64_t step = r.epoch - 1;
  // Keras' TensorBoard callback: "epoch_" + each history key.
  auto scalars = [](double loss, const NamedValues& metrics) {
    std::vector<std::pair<std::string, float>> out = {{"epoch_loss", static_cast<float>(loss)}};
    for (const auto& [name, value] : metrics) out.emplace_back("epoch_" + name, static_cast<float>(value));
    return out;
  };
  auto train = scalars(r.loss, r.metrics);
  train.emplace_back("epoch_learning_rate", static_cast<float>(r.learning_rate));
  train.emplace_back("epoch_images_per_sec", static_cast<float>(r.images_per_sec));
  RT_RETURN_IF_ERROR(TensorBoardError(tb_train_->AddScalars(step, train)));
  if (!r.has_val) return Status::Ok();
  if (!tb_validation_) {
    auto w = summary::EventWriter::Open((std::filesystem::path(job_.tensorboard_dir) / "validation").string(),
                                        options_.env);
    if (!w.ok()) return TensorBoardError(w.status());
    tb_validation_ = std::move(w).value();
  }
  return TensorBoardError(tb_validation_->AddScalars(step, scalars(r.val_loss, r.val_metrics)));
}

Status Trainer::WriteModelCheckpoint(int epoch) {
  RT_ASSIGN_OR_RETURN(std::string path, backup::FormatCheckpointPath(job_.model_checkpoint, epoch));
  std::map<std::string, std::string> metadata = {{"format", "ringtrain"}, {"layout", "channels_last"},
                                                 {"epoch", std::to_string(epoch)},
                                                 // the evaluator task's TensorBoard step (SidecarEvaluator's iterations)
                                                 {"global_step", std::to_string(global_step_)}};
  RT_RETURN_IF_ERROR(env::StorageError(checkpoint::SaveSafetensors(path, WeightViews(), metadata, options_.env),
                                       "model_checkpoint", "model_checkpoint.filepath"));
  RT_LOG(INFO) << "model checkpoint: " << path;
  return Status::Ok();
}

StatusOr<EvalResult> Trainer::EvaluateShards(collective::Communicator* comm) {
  if (!has_eval_) return FailedPreconditionError("the job has no data.eval; add one to evaluate");
  const int batch = job_.batch_size_per_worker;
  const size_t n = eval_.size();
  // The eval shard streams through an unshuffled pipeline in its order; the last batch is
  // partial (the pipeline's wrap into the next pass is not evaluated).
  if (!eval_input_) {
    eval_input_ = std::make_unique<data::Pipeline>(&eval_, batch, 0, /*shuffle=*/false,
                                                   PipelineFor("eval", job_.eval_data));
    eval_images_.resize(static_cast<size_t>(batch) * eval_.spec().size());
    eval_labels_.resize(static_cast<size_t>(batch) * eval_.spec().label_size());
  }
  eval_input_->Seek(0, 0);
  MetricSums mine;
  for (size_t first = 0; first < n; first += static_cast<size_t>(batch)) {
    const int b = static_cast<int>(std::min<size_t>(static_cast<size_t>(batch), n - first));
    RT_RETURN_IF_ERROR(eval_input_->Next(eval_images_.data(), eval_labels_.data()).About(Subject::kData));
    auto s = engine_->Evaluate(eval_images_.data(), eval_labels_.data(), b);
    if (!s.ok()) return s.status().WithContext("evaluating data.eval on the " + engine_->Describe());
    mine += MetricSums{s->loss_sum, s->metric_sums, 0};
  }
  mine.examples = static_cast<int64_t>(n);
  auto totals = SumOverWorkers(comm, mine, static_cast<size_t>(objective_->num_sums()));
  if (!totals.ok()) return totals.status().WithContext("reducing evaluation metrics");
  EvalResult r;
  r.examples = totals->examples;
  if (r.examples == 0) return FailedPreconditionError("data.eval is empty on every worker; give it examples");
  r.loss = totals->loss_sum / static_cast<double>(totals->examples);
  r.metrics = MetricValues(totals->metric_sums);
  r.accuracy = AccuracyOf(r.metrics);
  return r;
}

StatusOr<EvalResult> Trainer::Evaluate(collective::Communicator* comm) {
  // Outside Fit the host model is the authoritative copy (it may have been restored).
  RT_RETURN_IF_ERROR(engine_->LoadFromHost().WithContext("loading the model onto the " + engine_->Describe()));
  RT_ASSIGN_OR_RETURN(EvalResult r, EvaluateShards(comm));
  std::string metrics;
  for (const auto& [name, value] : r.metrics) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.4f", value);
    metrics += " - " + name + ": " + buf;
  }
  std::fprintf(options_.out, "Evaluation - %lld examples - loss: %.4f%s\n", static_cast<long long>(r.examples), r.loss,
               metrics.c_str());
  std::fflush(options_.out);
  if (history_file_) {
    nlohmann::json evaluation = {{"loss", r.loss}};
    for (const auto& [name, value] : r.metrics) evaluation[name] = value;
    RT_RETURN_IF_ERROR(history_file_->SetEvaluation(evaluation));
  }
  return r;
}

}  // namespace ringtrain::train
