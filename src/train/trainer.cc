#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <cblas.h>

#include "checkpoint/safetensors.h"
#include "common/fingerprint.h"
#include "common/logging.h"
#include "nn/loss.h"
#include "train/gradient_sync.h"

namespace ringtrain::train {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const config::JobConfig& job, const TrainerOptions& options) {
  openblas_set_num_threads(std::max(1, options.num_threads));
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

StatusOr<int> Trainer::StepsPerEpoch(Communicator* comm) {
  if (job_.steps_per_epoch > 0) return job_.steps_per_epoch;
  // One pass over the smallest shard, so that every worker runs the same number of steps.
  std::vector<float> sizes(static_cast<size_t>(comm->size()));
  float mine = static_cast<float>(train_.data.size());
  RT_RETURN_IF_ERROR(comm->AllGather(&mine, 1, sizes.data()));
  float smallest = *std::min_element(sizes.begin(), sizes.end());
  int steps = static_cast<int>(smallest) / job_.batch_size_per_worker;
  if (steps == 0) {
    return InvalidArgumentError("the smallest worker shard has " + std::to_string(static_cast<int>(smallest)) +
                                " examples, fewer than batch_size_per_worker; set steps_per_epoch or use more data");
  }
  return steps;
}

Status Trainer::Fit(Communicator* comm) {
  const int batch = job_.batch_size_per_worker;
  const int classes = model_->num_classes();
  const size_t n = model_->num_params();
  const float grad_scale = 1.0f / static_cast<float>(batch * comm->size());

  // Every worker starts from the chief's weights.
  RT_RETURN_IF_ERROR(comm->Broadcast(model_->params(), n, 0).WithContext("broadcasting the initial weights"));
  RT_ASSIGN_OR_RETURN(int steps, StepsPerEpoch(comm));
  RT_LOG(INFO) << "training " << job_.epochs << " epoch(s) of " << steps << " steps, global batch "
               << batch * comm->size() << " (" << batch << " x " << comm->size() << " workers), " << n
               << " parameters";

  GradientSync sync(comm, model_->grads(), n, job_.communication.bytes_per_pack, options_.collective_timeout);
  RT_LOG(INFO) << "gradients: " << n * sizeof(float) << " bytes in " << sync.num_packs() << " pack(s)"
               << (job_.communication.bytes_per_pack > 0 ? ", each all-reduced as soon as backward produces it" : "");
  data::BatchIterator it(&train_.data, batch, data::WorkerShuffleSeed(job_.seed, comm->rank()), /*shuffle=*/true);
  std::vector<float> images(static_cast<size_t>(batch) * train_.data.example_size);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  std::vector<float> grad_logits(static_cast<size_t>(batch) * classes);
  ProgressPrinter progress(options_.out, options_.progress_mode);

  for (int epoch = 1; epoch <= job_.epochs; ++epoch) {
    double start = Now();
    double loss_sum = 0;
    int64_t correct = 0;
    EpochLine line{epoch, job_.epochs, 0, steps};
    for (int step = 1; step <= steps; ++step) {
      it.Next(images.data(), labels.data());
      const float* logits = model_->Forward(images.data(), batch, /*training=*/true);
      nn::LossStats s = nn::SparseSoftmaxCrossEntropy(logits, labels.data(), batch, classes, grad_scale,
                                                      grad_logits.data());
      sync.BeginStep();
      model_->Backward(grad_logits.data(), [&sync](size_t ready_from) { sync.Ready(ready_from); });
      Status st = sync.Finish();
      if (!st.ok()) return st.WithContext("epoch " + std::to_string(epoch) + " step " + std::to_string(step));
      optimizer_->Apply(model_->params(), model_->grads(), n);
      loss_sum += s.loss_sum;
      correct += s.correct;
      line.step = step;
      line.loss = loss_sum / (static_cast<double>(step) * batch);
      line.accuracy = static_cast<double>(correct) / (static_cast<double>(step) * batch);
      progress.Update(line);
    }
    // The epoch's metrics over the global batch, as Keras reports them under this strategy.
    float totals[3] = {static_cast<float>(loss_sum), static_cast<float>(correct),
                       static_cast<float>(static_cast<int64_t>(steps) * batch)};
    RT_RETURN_IF_ERROR(comm->AllReduce(totals, 3, ReduceOp::kSum).WithContext("reducing epoch metrics"));
    EpochResult r;
    r.epoch = epoch;
    r.steps = steps;
    r.seconds = Now() - start;
    r.loss = totals[0] / totals[2];
    r.accuracy = totals[1] / totals[2];
    r.images_per_sec = totals[2] / r.seconds;
    history_.push_back(r);
    line.seconds = r.seconds;
    line.loss = r.loss;
    line.accuracy = r.accuracy;
    line.images_per_sec = r.images_per_sec;
    progress.Finish(line);
    if (history_file_) {
      RT_RETURN_IF_ERROR(history_file_->AppendEpoch(
          {{"epoch", epoch}, {"loss", r.loss}, {"accuracy", r.accuracy}, {"images_per_sec", r.images_per_sec}}));
    }
  }
  RT_LOG(INFO) << "final weights fingerprint: " << FingerprintHex(WeightsFingerprint());
  return Status::Ok();
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
  std::vector<checkpoint::TensorView> views;
  for (const auto& p : model_->param_infos()) views.push_back({p.name, p.shape, model_->params() + p.offset});
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
