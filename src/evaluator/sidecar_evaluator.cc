#include "evaluator/sidecar_evaluator.h"

#include <chrono>
#include <cinttypes>
#include <filesystem>
#include <thread>

#include "common/logging.h"
#include "data/shard.h"
#include "env/storage_error.h"
#include "inference/evaluate.h"
#include "inference/saved_model.h"

namespace ringtrain::evaluator {
namespace {

namespace fs = std::filesystem;

double UnixTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A bad "model" or data section is the job's fault; anything else concerns the data files.
Status DataError(const Status& s) {
  return s.About(s.code() == Code::kInvalidArgument ? Subject::kConfig : Subject::kData);
}

}  // namespace

std::string DefaultHistoryPath(const config::JobConfig& job) {
  if (job.history_file.empty()) return (fs::path(job.base_dir) / "eval_history.jsonl").string();
  fs::path p(job.history_file);
  const std::string ext = p.extension().string();
  return (p.parent_path() / (p.stem().string() + ".eval" + (ext.empty() ? ".jsonl" : ext))).string();
}

WatchOptions WatchOptionsFor(const config::JobConfig& job, const nn::Model& model, int num_workers) {
  WatchOptions watch;
  watch.model_checkpoint = job.model_checkpoint;
  watch.backup_dir = job.backup.backup_dir;
  watch.save_model = job.save_model;
  watch.epochs = job.epochs;
  watch.steps_per_epoch = job.steps_per_epoch;
  watch.job_fingerprint = job.TrajectoryFingerprint();
  watch.num_workers = num_workers;
  for (const auto& p : model.param_infos()) watch.params.push_back({p.name, p.shape, p.offset});
  return watch;
}

StatusOr<std::unique_ptr<SidecarEvaluator>> SidecarEvaluator::Create(const config::JobConfig& job,
                                                                      EvaluatorOptions options) {
  if (job.eval_data.is_null()) {
    return InvalidArgumentError("the evaluator task evaluates data.eval, and the job has none; add data.eval to the "
                                "job or drop the evaluator from TF_CONFIG")
        .About(Subject::kConfig);
  }
  auto model = nn::Model::FromJson(job.model, job.seed);
  if (!model.ok()) return model.status().WithContext("job: model").About(Subject::kConfig);

  RT_ASSIGN_OR_RETURN(CheckpointWatcher watcher,
                      CheckpointWatcher::Create(WatchOptionsFor(job, **model, options.num_workers), options.env));

  if (options.history_path.empty()) options.history_path = DefaultHistoryPath(job);
  RT_ASSIGN_OR_RETURN(EvalHistory history, EvalHistory::Open(options.history_path, options.env));

  const int batch = job.batch_size_per_worker;
  RT_RETURN_IF_ERROR(DataError(inference::CheckInferenceMemory(job, job.eval_data, "data.eval", batch,
                                                               "batch_size_per_worker", options.memory_bound)));
  // The whole split, as `ringtrain evaluate` reads it: no shard.
  auto shard = data::OpenShard(job.eval_data, job.base_dir, data::ShardPolicy::kOff, 0, 1, "data.eval");
  if (!shard.ok()) return DataError(shard.status());
  if (shard->spec().size() != (*model)->input_size()) {
    return InvalidArgumentError("data.eval examples have " + std::to_string(shard->spec().size()) +
                                " values but model.input_shape needs " + std::to_string((*model)->input_size()))
        .About(Subject::kConfig);
  }
  auto decoded = data::Materialize(*shard);
  if (!decoded.ok()) return DataError(decoded.status());

  std::unique_ptr<SidecarEvaluator> e(
      new SidecarEvaluator(job, std::move(options), std::move(watcher), std::move(history)));
  e->model_ = std::move(model).value();
  e->data_ = std::move(decoded).value();
  return e;
}

Status SidecarEvaluator::Evaluate(const Checkpoint& c) {
  RT_RETURN_IF_ERROR(inference::LoadWeights(model_.get(), c.weights, c.path).About(Subject::kStorage));
  auto r = inference::EvaluateModel(model_.get(), data_, job_.batch_size_per_worker, job_.loss, job_.metrics);
  if (!r.ok()) return r.status().WithContext("data.eval").About(Subject::kConfig);

  nlohmann::json record = {{"source", SourceName(c.source)}, {"checkpoint", c.path}, {"epoch", c.epoch},
                           {"step", c.step},  {"examples", r->examples},   {"loss", r->loss}};
  for (const auto& [name, value] : r->metrics) record[name] = value;
  record["final"] = c.final;
  record["unix_time"] = UnixTime();
  RT_RETURN_IF_ERROR(history_.Append(record));

  if (!job_.tensorboard_dir.empty()) {
    if (!tensorboard_) {
      auto w = summary::EventWriter::Open((fs::path(job_.tensorboard_dir) / "eval").string(), options_.env);
      if (!w.ok()) return env::StorageError(w.status(), "the evaluator's TensorBoard file", "tensorboard_dir");
      tensorboard_ = std::move(w).value();
    }
    summary::Scalars scalars = {{"loss", static_cast<float>(r->loss)}};
    for (const auto& [name, value] : r->metrics) scalars.emplace_back(name, static_cast<float>(value));
    Status s = tensorboard_->AddScalars(c.step >= 0 ? c.step : c.epoch, scalars);
    if (!s.ok()) return env::StorageError(s, "the evaluator's TensorBoard file", "tensorboard_dir");
  }

  // "Evaluation of epoch 2/5 (step 24, model_checkpoint ckpt_2.safetensors) - 256 examples - loss: 0.8312 - ..."
  std::string line = "Evaluation of epoch " + std::to_string(c.epoch) + "/" + std::to_string(job_.epochs) + " (";
  if (c.step >= 0) line += "step " + std::to_string(c.step) + ", ";
  line += std::string(SourceName(c.source)) + " " + fs::path(c.path).filename().string() + ") - " +
          std::to_string(r->examples) + " examples";
  char buf[64];
  std::snprintf(buf, sizeof(buf), " - loss: %.4f", r->loss);
  line += buf;
  for (const auto& [name, value] : r->metrics) {
    std::snprintf(buf, sizeof(buf), ": %.4f", value);
    line += " - " + name + buf;
  }
  std::fprintf(options_.out, "%s\n", line.c_str());
  std::fflush(options_.out);
  return Status::Ok();
}

Status SidecarEvaluator::Run() {
  Position at = history_.position();
  if (at.final) {
    std::fprintf(options_.out, "The evaluator's history %s already holds the final checkpoint (epoch %d); nothing "
                               "is left to evaluate (delete it to evaluate again)\n",
                 history_.path().c_str(), at.epoch);
    std::fflush(options_.out);
    return Status::Ok();
  }
  if (!history_.records().empty()) {
    RT_LOG(INFO) << "evaluator: " << history_.records().size() << " checkpoint(s) already evaluated (" << history_.path()
                 << "); going on after epoch " << at.epoch << ", step " << at.step;
  }
  using Clock = std::chrono::steady_clock;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.timeout_s));
  auto deadline = Clock::now() + timeout;
  for (;;) {
    RT_ASSIGN_OR_RETURN(std::optional<Checkpoint> next, watcher_.Next(at));
    if (next) {
      RT_RETURN_IF_ERROR(Evaluate(*next));
      at = Position{next->epoch, next->step, next->final};
      if (at.final) return Status::Ok();
      deadline = Clock::now() + timeout;
      continue;
    }
    if (Clock::now() >= deadline) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", options_.timeout_s);
      return DeadlineExceededError(std::string("the evaluator saw no new checkpoint for ") + secs + " s; it waited for " +
                                   watcher_.Waiting(at) +
                                   ". Training has stopped or is slower than that: raise --eval_timeout_s "
                                   "(RINGTRAIN_EVALUATOR_TIMEOUT_S) or restart the evaluator when training runs")
          .About(Subject::kPeers);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.poll_interval_s));
  }
}

}  // namespace ringtrain::evaluator
