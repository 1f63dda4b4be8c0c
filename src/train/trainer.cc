#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "checkpoint/safetensors.h"
#include "common/fingerprint.h"
#include "common/logging.h"
#include "kernels/kernels.h"
#include "nn/loss.h"
#include "train/gradient_sync.h"

namespace ringtrain::train {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const config::JobConfig& job, const TrainerOptions& options) {
  kernels::SetNumThreads(options.num_threads);
  std::unique_ptr<Trainer> t(new Trainer(job, options));
  RT_ASSIGN_OR_RETURN(t->model_, nn::Model::FromJson(job.model, job.seed));
  RT_ASSIGN_OR_RETURN(t->optimizer_, nn::Optimizer::FromJson(job.optimizer));
  RT_ASSIGN_OR_RETURN(data::ShardPolicy policy, data::ParseShardPolicy(job.auto_shard_policy));

  auto train = data::LoadShard(job.train_data, job.base_dir, policy, options.rank, options.num_workers, "data.train");
  if (!train.ok()) return train.status();
  t->train_ = std::move(train).value();
  RT_LOG(INFO) << "data.train: " << t->train_.description;
  if (!job.eval_data.is_null()) {
    auto eval = data::LoadShard(job.eval_data, job.base_dir, policy, options.rank, options.num_workers, "data.eval");
    if (!eval.ok()) return eval.status();
    t->eval_ = std::move(eval).value();
    t->has_eval_ = true;
    RT_LOG(INFO) << "data.eval: " << t->eval_.description;
  }
  const auto& d = t->train_.data;
  if (d.example_size != t->model_->input_size()) {
    return InvalidArgumentError("data.train examples have " + std::to_string(d.example_size) +
                                " values but model.input_shape needs " + std::to_string(t->model_->input_size()));
  }
  if (d.num_classes > t->model_->num_classes()) {
    return InvalidArgumentError("data.train has " + std::to_string(d.num_classes) + " classes but the model's last layer has " +
                                std::to_string(t->model_->num_classes()) + " units");
  }
  if (options.is_chief && !job.history_file.empty()) t->history_file_ = std::make_unique<HistoryFile>(job.history_file);
  return t;
}

Status Trainer::Prepare(Communicator* comm) {
  int steps = job_.steps_per_epoch;
  if (steps == 0) {
    // One pass over the smallest shard, so that every worker runs the same number of steps.
    std::vector<float> sizes(static_cast<size_t>(comm->size()));
    float mine = static_cast<float>(train_.data.size());
    RT_RETURN_IF_ERROR(comm->AllGather(&mine, 1, sizes.data()).WithContext("agreeing on the steps per epoch"));
    float smallest = *std::min_element(sizes.begin(), sizes.end());
    steps = static_cast<int>(smallest) / job_.batch_size_per_worker;
    if (steps == 0) {
      return InvalidArgumentError("the smallest worker shard has " + std::to_string(static_cast<int>(smallest)) +
                                  " examples, fewer than batch_size_per_worker; set steps_per_epoch or use more data");
    }
  }
  if (steps_per_epoch_ != 0 && steps != steps_per_epoch_) {
    return InvalidArgumentError("the workers now agree on " + std::to_string(steps) + " steps per epoch, but " +
                                std::to_string(steps_per_epoch_) + " before; a restarted task must load the same data");
  }
  steps_per_epoch_ = steps;
  return Status::Ok();
}

bool Trainer::IsBackupPoint(bool epoch_end) const {
  if (job_.backup.save_freq_steps > 0) return global_step_ % job_.backup.save_freq_steps == 0;
  return epoch_end;
}

Status Trainer::ReduceMetrics(Communicator* comm, double out[3]) {
  float totals[3] = {static_cast<float>(pending_[0]), static_cast<float>(pending_[1]), static_cast<float>(pending_[2])};
  RT_RETURN_IF_ERROR(comm->AllReduce(totals, 3, ReduceOp::kSum).WithContext("reducing the metrics"));
  for (int i = 0; i < 3; ++i) {
    out[i] = carried_[i] + totals[i];
    pending_[i] = 0;
  }
  return Status::Ok();
}

Status Trainer::Fit(Communicator* comm, const BackupHook& on_backup) {
  if (steps_per_epoch_ == 0) return FailedPreconditionError("Trainer::Fit before Trainer::Prepare");
  const int batch = job_.batch_size_per_worker;
  const int classes = model_->num_classes();
  const size_t n = model_->num_params();
  const float grad_scale = 1.0f / static_cast<float>(batch * comm->size());
  const int steps = steps_per_epoch_;
  if (global_step_ >= total_steps()) {
    RT_LOG(INFO) << "training already complete at step " << global_step_ << " (" << job_.epochs << " epoch(s))";
    RT_LOG(INFO) << "final weights fingerprint: " << FingerprintHex(WeightsFingerprint());
    return Status::Ok();
  }
  RT_LOG(INFO) << "training " << job_.epochs << " epoch(s) of " << steps << " steps"
               << (global_step_ > 0 ? " from step " + std::to_string(global_step_) : std::string()) << ", global batch "
               << batch * comm->size() << " (" << batch << " x " << comm->size() << " workers), " << n
               << " parameters";

  GradientSync sync(comm, model_->grads(), n, job_.communication.bytes_per_pack, options_.collective_timeout);
  RT_LOG(INFO) << "gradients: " << n * sizeof(float) << " bytes in " << sync.num_packs() << " pack(s)"
               << (job_.communication.bytes_per_pack > 0 ? ", each all-reduced as soon as backward produces it" : "");
  // Each worker's data position is a function of the step: it resumes mid-pass exactly.
  data::BatchIterator it(&train_.data, batch, data::WorkerShuffleSeed(job_.seed, comm->rank()), /*shuffle=*/true);
  it.Seek(0, static_cast<size_t>(global_step_) * static_cast<size_t>(batch));
  std::vector<float> images(static_cast<size_t>(batch) * train_.data.example_size);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  std::vector<float> grad_logits(static_cast<size_t>(batch) * classes);
  ProgressPrinter progress(options_.out, options_.progress_mode);

  const double fit_start = Now();
  struct AddTime {  // fit_seconds_ on every way out
    double start;
    double* total;
    ~AddTime() { *total += Now() - start; }
  } add_time{fit_start, &fit_seconds_};
  const int first_epoch = static_cast<int>(global_step_ / steps);
  for (int e = first_epoch; e < job_.epochs; ++e) {
    const int epoch = e + 1;
    const int first_step = e == first_epoch ? static_cast<int>(global_step_ % steps) : 0;
    double start = Now();
    double shown_loss = 0;  // this process's running metrics, for the progress line only
    int64_t shown_correct = 0;
    EpochLine line{epoch, job_.epochs, first_step, steps};
    for (int step = first_step + 1; step <= steps; ++step) {
      it.Next(images.data(), labels.data());
      const float* logits = model_->Forward(images.data(), batch, /*training=*/true);
      nn::LossStats s = nn::SparseSoftmaxCrossEntropy(logits, labels.data(), batch, classes, grad_scale,
                                                      grad_logits.data());
      sync.BeginStep();
      model_->Backward(grad_logits.data(), [&sync](size_t ready_from) { sync.Ready(ready_from); });
      Status st = sync.Finish();
      if (!st.ok()) return st.WithContext("epoch " + std::to_string(epoch) + " step " + std::to_string(step));
      optimizer_->Apply(model_->params(), model_->grads(), n);
      ++global_step_;
      if (step == first_step + 1 && e == first_epoch) RT_LOG(INFO) << "step " << global_step_ << " completed";
      pending_[0] += s.loss_sum;
      pending_[1] += static_cast<double>(s.correct);
      pending_[2] += batch;
      shown_loss += s.loss_sum;
      shown_correct += s.correct;
      const double shown_n = static_cast<double>(step - first_step) * batch;
      line.step = step;
      line.loss = shown_loss / shown_n;
      line.accuracy = static_cast<double>(shown_correct) / shown_n;
      progress.Update(line);

      const bool epoch_end = step == steps;
      if (epoch_end) {
        RT_RETURN_IF_ERROR(EndEpoch(comm, epoch, step - first_step, Now() - start, &line));
        progress.Finish(line);
      }
      // Reduced at every backup point, hook or not, so that the metrics are summed in
      // the same order whether or not the run was interrupted.
      if (IsBackupPoint(epoch_end)) {
        if (!epoch_end) {
          double totals[3];
          RT_RETURN_IF_ERROR(ReduceMetrics(comm, totals));
          std::copy(totals, totals + 3, carried_);
        }
        if (on_backup) {
          const double t0 = Now();
          Status st = on_backup(Snapshot());
          backup_seconds_ += Now() - t0;
          RT_RETURN_IF_ERROR(st);
        }
      }
    }
  }
  RT_LOG(INFO) << "final weights fingerprint: " << FingerprintHex(WeightsFingerprint());
  return Status::Ok();
}

Status Trainer::EndEpoch(Communicator* comm, int epoch, int steps_run, double seconds, EpochLine* line) {
  // The epoch's metrics over the global batch, as Keras reports them under this strategy.
  double totals[3];
  RT_RETURN_IF_ERROR(ReduceMetrics(comm, totals).WithContext("epoch " + std::to_string(epoch)));
  std::fill(carried_, carried_ + 3, 0.0);
  EpochResult r;
  r.epoch = epoch;
  r.steps = steps_per_epoch_;
  r.seconds = seconds;
  r.loss = totals[0] / totals[2];
  r.accuracy = totals[1] / totals[2];
  r.images_per_sec = static_cast<double>(steps_run) * job_.batch_size_per_worker * comm->size() / seconds;
  history_.push_back(r);
  nlohmann::json record = {{"epoch", epoch}, {"loss", r.loss}, {"accuracy", r.accuracy},
                           {"images_per_sec", r.images_per_sec}};
  history_json_.push_back(record);
  line->seconds = r.seconds;
  line->loss = r.loss;
  line->accuracy = r.accuracy;
  line->images_per_sec = r.images_per_sec;
  if (history_file_) RT_RETURN_IF_ERROR(history_file_->AppendEpoch(record));
  if (options_.is_chief && !job_.model_checkpoint.empty()) RT_RETURN_IF_ERROR(WriteModelCheckpoint(epoch));
  return Status::Ok();
}

Status Trainer::WriteModelCheckpoint(int epoch) {
  RT_ASSIGN_OR_RETURN(std::string path, backup::FormatCheckpointPath(job_.model_checkpoint, epoch));
  std::map<std::string, std::string> metadata = {{"format", "ringtrain"}, {"layout", "channels_last"},
                                                 {"epoch", std::to_string(epoch)}};
  RT_RETURN_IF_ERROR(checkpoint::SaveSafetensors(path, WeightViews(), metadata).WithContext("model_checkpoint"));
  RT_LOG(INFO) << "model checkpoint: " << path;
  return Status::Ok();
}

std::vector<checkpoint::TensorView> Trainer::WeightViews() const {
  std::vector<checkpoint::TensorView> views;
  for (const auto& p : model_->param_infos()) views.push_back({p.name, p.shape, model_->params() + p.offset});
  return views;
}

StatusOr<EvalResult> Trainer::Evaluate(Communicator* comm) {
  if (!has_eval_) return FailedPreconditionError("the job has no data.eval");
  const auto& d = eval_.data;
  const int batch = job_.batch_size_per_worker;
  const int classes = model_->num_classes();
  double loss_sum = 0;
  int64_t correct = 0;
  for (size_t first = 0; first < d.size(); first += static_cast<size_t>(batch)) {
    int b = static_cast<int>(std::min<size_t>(static_cast<size_t>(batch), d.size() - first));
    const float* logits = model_->Forward(d.images.data() + first * d.example_size, b, /*training=*/false);
    nn::LossStats s = nn::SparseSoftmaxCrossEntropy(logits, d.labels.data() + first, b, classes, 0.0f, nullptr);
    loss_sum += s.loss_sum;
    correct += s.correct;
  }
  float totals[3] = {static_cast<float>(loss_sum), static_cast<float>(correct), static_cast<float>(d.size())};
  RT_RETURN_IF_ERROR(comm->AllReduce(totals, 3, ReduceOp::kSum).WithContext("reducing evaluation metrics"));
  EvalResult r;
  r.examples = static_cast<int64_t>(totals[2]);
  if (r.examples == 0) return FailedPreconditionError("data.eval is empty");
  r.loss = totals[0] / totals[2];
  r.accuracy = totals[1] / totals[2];
  std::fprintf(options_.out, "Evaluation - %lld examples - loss: %.4f - accuracy: %.4f\n",
               static_cast<long long>(r.examples), r.loss, r.accuracy);
  std::fflush(options_.out);
  if (history_file_) {
    RT_RETURN_IF_ERROR(history_file_->SetEvaluation({{"loss", r.loss}, {"accuracy", r.accuracy}}));
  }
  return r;
}

Status Trainer::SaveModel() {
  if (job_.save_model.empty()) return Status::Ok();
  std::vector<checkpoint::TensorView> views = WeightViews();
  std::map<std::string, std::string> metadata = {{"format", "ringtrain"}, {"layout", "channels_last"}};
  if (options_.is_chief) {
    RT_RETURN_IF_ERROR(checkpoint::SaveSafetensors(job_.save_model, views, metadata));
    RT_LOG(INFO) << "saved the model to " << job_.save_model;
    return Status::Ok();
  }
  // Like the seed tutorial's write_filepath(): a non-chief worker saves to a temporary
  // directory of its own (so that no two workers write one file), then deletes it.
  std::filesystem::path target(job_.save_model);
  std::filesystem::path tmp_dir =
      target.parent_path() / (".workertemp_" + std::to_string(options_.rank));
  Status st = checkpoint::SaveSafetensors((tmp_dir / target.filename()).string(), views, metadata);
  std::error_code ec;
  std::filesystem::remove_all(tmp_dir, ec);
  return st;
}

uint64_t Trainer::WeightsFingerprint() const {
  return Fingerprint64(model_->params(), model_->num_params() * sizeof(float));
}

}  // namespace ringtrain::train
