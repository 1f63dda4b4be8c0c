#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/safetensors.h"
#include "common/fingerprint.h"
#include "common/logging.h"
#include "common/memory_bound.h"
#include "env/file_util.h"
#include "env/storage_error.h"
#include "inference/weights_by_name.h"
#include "modelfiles/keras3_config.h"
#include "modelfiles/keras_archive.h"
#include "nn/losses/loss.h"
#include "nn/layer.h"
#include "train/gradient_sync.h"
#include "train/memory_bound.h"
#include "train/step_observer.h"

namespace ringtrain::train {
namespace {

// A data section the job got wrong is the job's fault; anything else concerns the data files.
Status DataError(const Status& s) {
  return s.About(s.code() == Code::kInvalidArgument ? Subject::kConfig : Subject::kData);
}

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// How many times an epoch the workers sum their running metrics for the progress bar:
// enough for a bar redrawn a few times a second, few enough to cost nothing measurable.
constexpr int kProgressReductions = 25;

}  // namespace

StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const config::JobConfig& job, const TrainerOptions& options) {
  std::unique_ptr<Trainer> t(new Trainer(job, options));
  // Before the model, the batches or the data are allocated: a job that cannot fit is refused up front.
  RT_RETURN_IF_ERROR(CheckTrainingMemory(job, options.rank, options.num_workers, options.memory_bound));
  RT_ASSIGN_OR_RETURN(t->model_, nn::Model::FromJson(job.model, job.seed));
  if (job.save_model.size() > 6 && job.save_model.compare(job.save_model.size() - 6, 6, ".keras") == 0) {
    // Checked now, not when training is over: a model the archive cannot describe.
    auto config = modelfiles::Keras3ConfigFromCompact(job.model);
    if (!config.ok()) {
      return InvalidArgumentError("save_model: the model cannot be written as a .keras archive (" +
                                  config.status().message() + "); save it as .safetensors instead")
          .About(Subject::kConfig);
    }
  }
  if (!job.initial_weights.empty()) {
    // A pretrained file may hold more than this model uses (the pretrained model's own
    // top): up to 4x the model's weights and 1 GiB more are read.
    const uint64_t max_bytes = SatAdd(SatMul(t->model_->num_params(), 4 * sizeof(float)), uint64_t{1} << 30);
    RT_ASSIGN_OR_RETURN(const inference::ByNameReport report,
                        inference::LoadInitialWeights(t->model_.get(), job.initial_weights, job.skip_mismatch, max_bytes));
    for (const std::string& line : inference::DescribeReport(report, job.initial_weights)) RT_LOG(INFO) << line;
  }
  RT_ASSIGN_OR_RETURN(t->optimizer_, nn::Optimizer::FromJson(job.optimizer));
  // The variables, for per-variable work (clipnorm), as Keras' optimizer.build(variables).
  std::vector<nn::Optimizer::VariableSpan> variables;
  // Only the trainable ones, which tile [0, num_trainable()) of the weights.
  for (const nn::ParamInfo& p : t->model_->param_infos()) {
    if (p.trainable) variables.push_back({p.name, p.offset, p.count});
  }
  std::sort(variables.begin(), variables.end(),
            [](const nn::Optimizer::VariableSpan& a, const nn::Optimizer::VariableSpan& b) { return a.offset < b.offset; });
  t->optimizer_->SetVariables(std::move(variables));
  if (options.new_engine) {
    RT_ASSIGN_OR_RETURN(t->engine_, options.new_engine(t->model_.get(), t->optimizer_.get(), job.batch_size_per_worker));
  } else {
    t->engine_ = engine::NewCpuEngine(t->model_.get(), t->optimizer_.get(), job.batch_size_per_worker);
  }
  // The loss and metrics need the model's output size: what JobConfig could not check
  // before the model was built is checked here, with its "loss: ..." / "metrics[i]: ..." line.
  // Made for a class index per position here; data whose labels are a target per output
  // value (seen once the data is open, below) remakes it, so its error waits until then.
  Status class_objective = Status::Ok();
  const bool several_outputs = t->model_->outputs().size() > 1;
  if (!several_outputs && (nn::LossPerOutput(job.loss) || !job.loss_weights.is_null())) {
    return InvalidArgumentError(std::string(nn::LossPerOutput(job.loss) ? "loss" : "loss_weights") +
                                ": names something per output, but the model has one output; give one loss")
        .About(Subject::kConfig);
  }
  if (!several_outputs) {
    auto objective = engine::Objective::FromJson(job.loss, job.metrics, t->model_->num_classes(),
                                                 t->model_->output_positions());
    if (objective.ok()) {
      t->objective_ = std::make_unique<engine::Objective>(std::move(objective).value());
      RT_RETURN_IF_ERROR(t->engine_->SetObjective(t->objective_.get()));
    } else if (!engine::Objective::FromJson(job.loss, job.metrics, 1, t->model_->output_size()).ok()) {
      return objective.status();  // fits neither layout: the configuration's error, before any data is read
    } else {
      class_objective = objective.status();
    }
  }
  RT_LOG(INFO) << "device: " << t->engine_->Describe();
  if (!job.lr_schedule.is_null()) {
    RT_ASSIGN_OR_RETURN(t->schedule_, nn::LrSchedule::FromJson(job.lr_schedule));
    RT_LOG(INFO) << "lr_schedule: " << t->schedule_->Describe();
  }
  RT_ASSIGN_OR_RETURN(data::ShardPolicy policy, data::ParseShardPolicy(job.auto_shard_policy));

  auto train = data::OpenShard(job.train_data, job.base_dir, policy, options.rank, options.num_workers, "data.train");
  if (!train.ok()) return DataError(train.status());
  t->train_ = std::move(train).value();
  RT_LOG(INFO) << "data.train: " << t->train_.description;
  if (!job.eval_data.is_null()) {
    auto eval = data::OpenShard(job.eval_data, job.base_dir, policy, options.rank, options.num_workers, "data.eval");
    if (!eval.ok()) return DataError(eval.status());
    t->eval_ = std::move(eval).value();
    t->has_eval_ = true;
    RT_LOG(INFO) << "data.eval: " << t->eval_.description;
  }
  const data::ExampleSpec& d = t->train_.spec();
  RT_RETURN_IF_ERROR(t->FitNamedInputs());
  if (d.size() != t->model_->input_size()) {
    return InvalidArgumentError("data.train examples have " + std::to_string(d.size()) +
                                " values but model.input_shape needs " + std::to_string(t->model_->input_size()));
  }
  const int outputs = t->model_->num_classes();
  bool per_value = false;
  if (several_outputs) {
    RT_RETURN_IF_ERROR(t->FitOutputs(job));
  } else if (!d.targets.empty()) {
    return InvalidArgumentError("data.train names " + std::to_string(d.targets.size()) +
                                " arrays of labels but the model has one output; give \"y\" one array");
  } else {
    RT_RETURN_IF_ERROR(t->FitObjectiveToLabels(job, class_objective, &per_value));
  }
  if (!several_outputs && !per_value && outputs >= 2 && d.num_classes > outputs) {
    return InvalidArgumentError("data.train has " + std::to_string(d.num_classes) + " classes but the model's last layer has " +
                                std::to_string(outputs) + " units");
  }
  if (per_value && t->objective_->loss().kind() == nn::LossKind::kBinaryCrossentropy && d.num_classes > 2) {
    return InvalidArgumentError("data.train's targets hold values up to " + std::to_string(d.num_classes - 1) +
                                "; binary_crossentropy over every output value takes multi-hot targets, 0 and 1");
  }
  if (!several_outputs && outputs == 1 && t->objective_->loss().kind() == nn::LossKind::kBinaryCrossentropy &&
      d.num_classes > 2) {
    return InvalidArgumentError("data.train has " + std::to_string(d.num_classes) + " classes but binary_crossentropy " +
                                "with one output unit takes the labels 0 and 1; give the last layer one unit per class " +
                                "and use a categorical loss, or use two-class data");
  }
  if (t->has_eval_ && t->eval_.spec().size() != d.size()) {
    return InvalidArgumentError("data.eval examples have " + std::to_string(t->eval_.spec().size()) +
                                " values but data.train's have " + std::to_string(d.size()));
  }
  RT_RETURN_IF_ERROR(CheckShardMemory(job, options.rank, options.num_workers, t->train_,
                                      t->has_eval_ ? &t->eval_ : nullptr, options.memory_bound));
  if (options.is_chief && !job.history_file.empty()) {
    t->history_file_ = std::make_unique<HistoryFile>(job.history_file, options.env);
  }
  if (options.is_chief && !job.tensorboard_dir.empty()) {
    // Opened here so that a bad directory fails before any network work; the validation
    // writer waits for the first validation (Keras creates it only when validation runs).
    auto w = summary::EventWriter::Open((std::filesystem::path(job.tensorboard_dir) / "train").string(), options.env);
    if (!w.ok()) return env::StorageError(w.status(), "tensorboard_dir", "tensorboard_dir");
    t->tb_train_ = std::move(w).value();
    RT_LOG(INFO) << "tensorboard: " << t->tb_train_->path();
  }
  return t;
}

// The labels' layout against the model's output: a class index per position of the output
// (one per example for a vector), or a target per output value (multi-hot, integer
// regression targets), for which the objective is remade. Labels that fit neither are
// refused naming both shapes; `class_objective` is the per-position objective's error, if
// it had one (returned unless the labels are per value).
Status Trainer::FitObjectiveToLabels(const config::JobConfig& job, const Status& class_objective, bool* per_value) {
  const data::ExampleSpec& d = train_.spec();
  const size_t positions = model_->output_positions();
  // The labels' layout: a class index per position of the output (one per example for a
  // vector), or a target per output value (multi-hot, integer regression targets).
  const size_t labels = d.label_size();
  // Float targets are always a target per value (regression, soft targets).
  *per_value = (labels != positions || d.float_targets) && labels == model_->output_size();
  if (d.float_targets && !*per_value) {
    return InvalidArgumentError("data.train's labels are float targets, " + std::to_string(labels) +
                                " per example, but the model's output " + nn::ShapeWithBatch(model_->output_shape()) +
                                " holds " + std::to_string(model_->output_size()) +
                                " values; float targets need one per output value");
  }
  if (has_eval_ && eval_.spec().float_targets != d.float_targets) {
    return InvalidArgumentError(std::string("data.eval's labels are ") +
                                (eval_.spec().float_targets ? "floats" : "integers") + " but data.train's are " +
                                (d.float_targets ? "floats" : "integers") + "; give both the same dtype");
  }
  const std::string out_shape = nn::ShapeWithBatch(model_->output_shape());
  for (const auto& [shard, field] : {std::pair<const data::Shard*, const char*>{&train_, "data.train"},
                                     {has_eval_ ? &eval_ : nullptr, "data.eval"}}) {
    if (shard == nullptr || shard->spec().label_size() == (*per_value ? labels : positions)) continue;
    const data::ExampleSpec& spec = shard->spec();
    if (positions == 1 && spec.label_shape.size() == 2) {
      return InvalidArgumentError(std::string(field) + " gives " + std::to_string(spec.label_size()) +
                                  " labels per example (masks of " + std::to_string(spec.label_shape[0]) + " x " +
                                  std::to_string(spec.label_shape[1]) + ") but the model's output " + out_shape +
                                  " takes one; end the model with a per-pixel layer (e.g. a 1x1 Conv2D) for "
                                  "segmentation");
    }
    return InvalidArgumentError(std::string(field) + " gives " + std::to_string(spec.label_size()) +
                                " label(s) per example but the model's output " + out_shape + " takes a class " +
                                "index per position (" + std::to_string(positions) + ") or a target per value (" +
                                std::to_string(model_->output_size()) + "); make the labels' shape one of these");
  }
  if (*per_value) {
    // Keras' element-wise losses (binary cross-entropy, MSE, MAE) and metrics over every
    // value: as one-output rows, one per value, averaged per example.
    auto objective = engine::Objective::FromJson(job.loss, job.metrics, 1, model_->output_size(), d.float_targets);
    if (!objective.ok()) {
      return InvalidArgumentError("data.train gives a " + std::string(d.float_targets ? "float " : "") +
                                  "target per output value " + out_shape + ", which takes an element-wise loss and "
                                  "metrics (binary_crossentropy, mse, mae; binary_accuracy" +
                                  (d.float_targets ? "" : ", auc") + "): " + objective.status().message())
          .About(Subject::kConfig);
    }
    objective_ = std::make_unique<engine::Objective>(std::move(objective).value());
    RT_RETURN_IF_ERROR(engine_->SetObjective(objective_.get()));
    RT_LOG(INFO) << "data.train: " << labels << (d.float_targets ? " float" : "") << " targets per example, one per "
                 << "output value " << out_shape;
    return Status::Ok();
  }
  return class_objective;
}

Status Trainer::Prepare(collective::Communicator* comm) {
  int steps = job_.steps_per_epoch;
  if (steps == 0) {
    // One pass over the smallest shard, so that every worker runs the same number of steps.
    auto smallest = SmallestOverWorkers(comm, static_cast<int64_t>(train_.size()));
    if (!smallest.ok()) return smallest.status().WithContext("agreeing on the steps per epoch");
    const int64_t passes = *smallest / job_.batch_size_per_worker;
    if (passes == 0) {
      return InvalidArgumentError("the smallest worker shard has " + std::to_string(*smallest) +
                                  " examples, fewer than batch_size_per_worker; set steps_per_epoch or use more data");
    }
    if (passes > std::numeric_limits<int>::max()) {
      return InvalidArgumentError("one pass over the smallest worker shard (" + std::to_string(*smallest) +
                                  " examples) is " + std::to_string(passes) +
                                  " steps, more than an epoch can hold; set steps_per_epoch");
    }
    steps = static_cast<int>(passes);
  }
  if (steps_per_epoch_ != 0 && steps != steps_per_epoch_) {
    return InvalidArgumentError("the workers now agree on " + std::to_string(steps) + " steps per epoch, but " +
                                std::to_string(steps_per_epoch_) + " before; a restarted task must load the same data");
  }
  steps_per_epoch_ = steps;
  return Status::Ok();
}

double Trainer::NextLearningRate(int epoch0) {
  if (!schedule_) return optimizer_->learning_rate();
  const double lr = schedule_->LearningRate(epoch0, optimizer_->iterations());
  optimizer_->set_learning_rate(lr);
  return lr;
}

bool Trainer::IsBackupPoint(bool epoch_end) const {
  if (job_.backup.save_freq_steps > 0) return global_step_ % job_.backup.save_freq_steps == 0;
  return epoch_end;
}

NamedValues Trainer::MetricValues(const std::vector<double>& sums) const {
  std::vector<double> zeros;
  const double* s = sums.data();
  if (sums.size() < static_cast<size_t>(objective_->num_sums())) {
    zeros.assign(static_cast<size_t>(objective_->num_sums()), 0.0);
    s = zeros.data();
  }
  const std::vector<double> values = objective_->Results(s);
  NamedValues out;
  for (size_t m = 0; m < values.size(); ++m) out.emplace_back(objective_->metrics()[m]->name(), values[m]);
  return out;
}

double Trainer::AccuracyOf(const NamedValues& values) {
  for (const auto& [name, value] : values) {
    if (name == "accuracy" || name == "acc") return value;
  }
  return 0.0;
}

StatusOr<MetricSums> Trainer::ReduceMetrics(collective::Communicator* comm) {
  auto totals = SumOverWorkers(comm, pending_, static_cast<size_t>(objective_->num_sums()));
  if (!totals.ok()) return totals.status().WithContext("reducing the metrics");
  MetricSums out = carried_;
  out += *totals;
  pending_ = MetricSums();
  return out;
}

Status Trainer::Fit(collective::Communicator* comm, const BackupHook& on_backup) {
  if (steps_per_epoch_ == 0) return FailedPreconditionError("Trainer::Fit before Trainer::Prepare");
  const int batch = job_.batch_size_per_worker;
  const size_t n = model_->num_reduced();  // the trainable weights' gradients and the layers' batch statistics
  const float grad_scale = 1.0f / static_cast<float>(batch * comm->size());
  const int steps = steps_per_epoch_;
  if (global_step_ >= total_steps()) {
    RT_LOG(INFO) << "training already complete at step " << global_step_ << " (" << job_.epochs << " epoch(s))";
    RT_LOG(INFO) << "final weights fingerprint: " << FingerprintHex(WeightsFingerprint());
    return Status::Ok();
  }
  RT_LOG(INFO) << "training " << job_.epochs << " epoch(s) of " << steps << " steps"
               << (global_step_ > 0 ? " from step " + std::to_string(global_step_) : std::string()) << ", global batch "
               << batch * comm->size() << " (" << batch << " x " << comm->size() << " workers), "
               << model_->num_params() << " parameters"
               << (model_->num_trainable() < model_->num_params()
                       ? " (" + std::to_string(model_->num_trainable()) + " trainable)"
                       : std::string());

  // The engine holds the state while Fit runs; on every way out it goes back to the
  // host model and optimizer (after a failure the caller restores a backup anyway).
  RT_RETURN_IF_ERROR(engine_->LoadFromHost().WithContext("loading the model onto the " + engine_->Describe()));
  struct StoreOnExit {
    engine::Engine* engine;
    ~StoreOnExit() {
      Status st = engine->StoreToHost();
      if (!st.ok()) RT_LOG(ERROR) << "copying the model back from the device: " << st.ToString();
    }
  } store_on_exit{engine_.get()};
  GradientSync sync(comm, engine_->GradientBuffer(*comm), n, job_.communication.bytes_per_pack,
                    options_.collective_timeout);
  RT_LOG(INFO) << "gradients: " << n * sizeof(float) << " bytes in " << sync.num_packs() << " pack(s)"
               << (job_.communication.bytes_per_pack > 0 ? ", each all-reduced as soon as backward produces it" : "");
  // Each worker's data position is a function of the step: it resumes mid-pass exactly.
  if (!train_input_ || train_input_rank_ != comm->rank()) {
    train_input_.reset();  // joins the old one's threads first
    train_input_ = std::make_unique<data::Pipeline>(&train_, batch, data::WorkerShuffleSeed(job_.seed, comm->rank()),
                                                    /*shuffle=*/true, PipelineFor("train", job_.train_data));
    train_input_rank_ = comm->rank();
    if (train_input_->threads() > 0) {
      RT_LOG(INFO) << "input pipeline: " << train_input_->threads() << " decoding thread(s), "
                   << train_input_->prefetch_batches() << " batch(es) prefetched";
    }
  }
  data::Pipeline* input = train_input_.get();
  input->Seek(0, static_cast<size_t>(global_step_) * static_cast<size_t>(batch));
  const double first_batch_start = Now();  // the first batch's wait belongs to the first epoch
  const double first_batch_wait = input->wait_seconds();
  RT_RETURN_IF_ERROR(input->Next(engine_->next_images(), engine_->next_labels()).About(Subject::kData));
  RT_RETURN_IF_ERROR(engine_->SubmitBatch(batch));
  ProgressPrinter progress(options_.out, options_.progress_mode);

  const double fit_start = Now();
  struct AddTime {  // fit_seconds_ on every way out
    double start;
    double* total;
    ~AddTime() { *total += Now() - start; }
  } add_time{fit_start, &fit_seconds_};
  const int first_epoch = static_cast<int>(global_step_ / steps);
  preemption_ = Preemption();
  // While Fit runs, a stop request waits for the next step boundary (else it ends the
  // process at once: there is no step to save).
  struct Listening {
    preempt::StopFlag* flag;
    explicit Listening(preempt::StopFlag* f) : flag(f) {
      if (flag) flag->listening.store(true);
    }
    ~Listening() {
      if (flag) flag->listening.store(false);
    }
  } listening(options_.stop);
  for (int e = first_epoch; e < job_.epochs; ++e) {
    const int epoch = e + 1;
    const int first_step = e == first_epoch ? static_cast<int>(global_step_ % steps) : 0;
    const double start = e == first_epoch ? first_batch_start : Now();
    const double input_wait_start = e == first_epoch ? first_batch_wait : input->wait_seconds();
    MetricSums shown;  // this process's running metrics, for the progress line only
    const double wait_start = sync.wait_seconds();
    EpochLine line;
    line.epoch = epoch;
    line.epochs = job_.epochs;
    line.step = first_step;
    line.steps = steps;
    EpochTiming timing;
    for (int step = first_step + 1; step <= steps; ++step) {
      timing.learning_rate = NextLearningRate(e);
      const double step_start = Now(), step_input_wait = input->wait_seconds(), step_comm_wait = sync.wait_seconds();
      auto stats = Step(comm, &sync, input, grad_scale, /*prefetch=*/global_step_ + 1 < total_steps());
      if (!stats.ok()) return stats.status().WithContext("epoch " + std::to_string(epoch) + " step " + std::to_string(step));
      const engine::BatchStats& s = *stats;
      ++global_step_;
      if (step == first_step + 1 && e == first_epoch) RT_LOG(INFO) << "step " << global_step_ << " completed";
      // Reported as the step ends, before the collectives that only the bar and preemption
      // need: a rank waiting there for a slower one is not computing.
      if (!options_.observers.empty()) {
        StepReport r;
        r.global_step = global_step_;
        r.epoch = epoch;
        r.epochs = job_.epochs;
        r.step = step;
        r.steps = steps;
        r.examples = batch;
        r.num_workers = comm->size();
        r.rank = comm->rank();
        r.seconds = Now() - step_start;
        r.input_wait_seconds = input->wait_seconds() - step_input_wait;
        r.comm_wait_seconds = comm->size() > 1 ? sync.wait_seconds() - step_comm_wait : 0.0;
        r.compute_seconds = std::max(0.0, r.seconds - r.input_wait_seconds - r.comm_wait_seconds);
        r.loss = batch > 0 ? s.loss_sum / static_cast<double>(batch) : 0.0;
        r.accuracy = AccuracyOf(MetricValues(s.metric_sums));
        r.learning_rate = timing.learning_rate;
        r.allreduced_bytes = comm->size() > 1 ? static_cast<uint64_t>(n) * sizeof(float) : 0;
        r.unix_time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        for (StepObserver* o : options_.observers) o->OnStep(r);
      }
      const MetricSums batch_sums{s.loss_sum, s.metric_sums, batch};
      pending_ += batch_sums;
      shown += batch_sums;
      line.step = step;
      // The bar shows the running GLOBAL values, as Keras' fit() does for one process:
      // every worker sums its running sums with the others' at the same steps (about 25
      // an epoch, whatever this worker's bar mode, so that all issue the same
      // collectives). Only the bar reads them; the weights and the epoch's metrics never do.
      const int progress_every = std::max(1, (steps + kProgressReductions - 1) / kProgressReductions);
      if (comm->size() == 1) {
        line.loss = shown.loss_sum / static_cast<double>(shown.examples);
        if (progress.drawing()) line.metrics = MetricValues(shown.metric_sums);
      } else if (step % progress_every == 0 || step == first_step + 1 || step == steps) {
        auto global = SumOverWorkers(comm, shown, static_cast<size_t>(objective_->num_sums()));
        if (!global.ok()) {
          return global.status().WithContext("epoch " + std::to_string(epoch) + " step " + std::to_string(step) +
                                             ": reducing the running metrics");
        }
        line.loss = global->examples > 0 ? global->loss_sum / static_cast<double>(global->examples) : 0.0;
        if (progress.drawing()) line.metrics = MetricValues(global->metric_sums);
      }
      progress.Update(line);

      const bool epoch_end = step == steps;
      if (epoch_end) {
        timing.steps_run = step - first_step;
        timing.seconds = Now() - start;
        // One worker has nobody to wait for; its "wait" is only the hand-off to the thread.
        timing.comm_wait_seconds = comm->size() > 1 ? sync.wait_seconds() - wait_start : 0.0;
        timing.input_wait_seconds = input->wait_seconds() - input_wait_start;
        RT_RETURN_IF_ERROR(EndEpoch(comm, epoch, timing, &line));
        progress.Finish(line);
      }
      // Reduced at every backup point, hook or not, so that the metrics are summed in
      // the same order whether or not the run was interrupted.
      if (IsBackupPoint(epoch_end)) RT_RETURN_IF_ERROR(TakeBackupPoint(comm, epoch_end, on_backup).status());
      // Preemption: every worker learns who asked to stop, after the same step. After the
      // last step there is nothing left to save: the job ends as usual.
      if (options_.stop != nullptr && global_step_ < total_steps()) {
        auto ranks = RanksAskingToStop(comm, options_.stop->requested.load());
        if (!ranks.ok()) return ranks.status().WithContext("epoch " + std::to_string(epoch) + " step " + std::to_string(step));
        if (!ranks->empty()) return StopAtBoundary(comm, *ranks, epoch, step, epoch_end, on_backup);
      }
    }
  }
  RT_LOG(INFO) << "final weights fingerprint: " << FingerprintHex(WeightsFingerprint());
  return Status::Ok();
}

StatusOr<double> Trainer::TakeBackupPoint(collective::Communicator* comm, bool epoch_end, const BackupHook& on_backup) {
  // The epoch's metrics so far, summed over the workers (at an epoch end EndEpoch has
  // already done that).
  if (!epoch_end) {
    RT_ASSIGN_OR_RETURN(carried_, ReduceMetrics(comm));
  }
  if (!on_backup) return 0.0;
  const double t0 = Now();
  RT_RETURN_IF_ERROR(engine_->StoreToHost().WithContext("copying the model back for a backup"));
  Status st = on_backup(Snapshot());
  const double seconds = Now() - t0;
  backup_seconds_ += seconds;
  for (StepObserver* o : options_.observers) o->OnBackup(global_step_, seconds);
  RT_RETURN_IF_ERROR(st);
  return seconds;
}

Status Trainer::StopAtBoundary(collective::Communicator* comm, const std::vector<int>& ranks, int epoch, int step,
                               bool epoch_end, const BackupHook& on_backup) {
  Preemption p;
  p.global_step = global_step_;
  p.epoch = epoch;
  p.step = step;
  p.steps = steps_per_epoch_;
  p.ranks = ranks;
  p.asked_here = std::find(ranks.begin(), ranks.end(), comm->rank()) != ranks.end();
  if (!IsBackupPoint(epoch_end)) {  // one extra backup point, as any other (the weights are untouched)
    RT_ASSIGN_OR_RETURN(p.backup_seconds, TakeBackupPoint(comm, epoch_end, on_backup));
  }
  preemption_ = p;
  std::string who;
  for (int r : ranks) who += (who.empty() ? "rank " : ", ") + std::to_string(r);
  const std::string where = "step " + std::to_string(p.global_step) + " (epoch " + std::to_string(epoch) + ", step " +
                            std::to_string(step) + "/" + std::to_string(steps_per_epoch_) + ")";
  if (p.asked_here) return Status(Code::kAborted, "preempted at " + where);
  return Status(Code::kUnavailable, who + " stopped on a preemption request (SIGTERM) at " + where, Subject::kPeers);
}

StatusOr<engine::BatchStats> Trainer::Step(collective::Communicator* comm, GradientSync* sync, data::Pipeline* input,
                                      float grad_scale, bool prefetch) {
  nn::StepContext context;
  context.seed = job_.seed;
  context.step = global_step_;
  context.replica = comm->rank();
  context.num_replicas = comm->size();
  // Synchronized BatchNormalization's statistics, in order with the gradient packs.
  Status sync_bn = Status::Ok();
  if (comm->size() > 1) {
    context.all_reduce_sum = [sync, &sync_bn](float* data, size_t n) {
      Status st = sync->AllReduceInline(data, n);
      if (!st.ok() && sync_bn.ok()) sync_bn = st;
      return st.ok();
    };
  }
  model_->set_step_context(context);
  RT_RETURN_IF_ERROR(engine_->StartStep(grad_scale));
  Status next = Status::Ok();
  if (prefetch) {  // on a GPU this overlaps the step under way
    next = input->Next(engine_->next_images(), engine_->next_labels());
    if (next.ok()) RT_RETURN_IF_ERROR(engine_->SubmitBatch(job_.batch_size_per_worker));
  }
  sync->BeginStep();
  auto stats = engine_->FinishBackward([sync](size_t ready_from) { sync->Ready(ready_from); });
  if (options_.fault_compute_delay.count() > 0) std::this_thread::sleep_for(options_.fault_compute_delay);
  Status st = sync->Finish();  // also after a failed backward: the packs already released must finish
  if (!stats.ok()) return stats.status();
  RT_RETURN_IF_ERROR(st);
  RT_RETURN_IF_ERROR(sync_bn);
  // Data that cannot be decoded fails the run (exit 3), after this step's collectives
  // finished, so that no peer is left inside a half-done all-reduce.
  if (!next.ok()) return next.About(Subject::kData);
  RT_RETURN_IF_ERROR(engine_->ApplyUpdate());
  return stats;
}

data::PipelineOptions Trainer::PipelineFor(const std::string& split, const nlohmann::json& entry) const {
  data::PipelineOptions o = job_.pipeline;
  if (o.cache == data::PipelineOptions::Cache::kFile) {
    o.cache_path += "." + split + ".w" + std::to_string(options_.rank);
    o.cache_key = entry.dump();
  }
  return o;
}

std::vector<checkpoint::TensorView> Trainer::WeightViews() const {
  std::vector<checkpoint::TensorView> views;
  for (const auto& p : model_->param_infos()) views.push_back({p.name, p.shape, model_->params() + p.offset});
  return views;
}

Status Trainer::SaveModel() {
  if (job_.save_model.empty()) return Status::Ok();
  std::vector<checkpoint::TensorView> views = WeightViews();
  std::map<std::string, std::string> metadata = {{"format", "ringtrain"}, {"layout", "channels_last"}};
  // "x.keras": a Keras 3 archive keras.saving.load_model opens; anything else safetensors.
  auto save = [&](const std::string& path) {
    const bool keras = path.size() > 6 && path.compare(path.size() - 6, 6, ".keras") == 0;
    return keras ? modelfiles::WriteKerasModel(path, job_.model, views, std::time(nullptr), options_.env)
                 : checkpoint::SaveSafetensors(path, views, metadata, options_.env);
  };
  if (options_.is_chief) {
    RT_RETURN_IF_ERROR(env::StorageError(save(job_.save_model), "save_model", "save_model"));
    RT_LOG(INFO) << "saved the model to " << job_.save_model;
    return Status::Ok();
  }
  // Like the seed tutorial's write_filepath(): a non-chief worker saves to a temporary
  // directory of its own (so that no two workers write one file), then deletes it.
  std::filesystem::path target(job_.save_model);
  std::filesystem::path tmp_dir =
      target.parent_path() / (".workertemp_" + std::to_string(options_.rank));
  Status st = save((tmp_dir / target.filename()).string());
  // Debris, not a failure: the chief's copy is the model.
  Status removed = env::DeleteRecursively(options_.env, tmp_dir.string());
  if (!removed.ok()) RT_LOG(WARNING) << "cannot delete the temporary model directory: " << removed.message();
  return env::StorageError(st, "save_model", "save_model");
}

uint64_t Trainer::WeightsFingerprint() const {
  return Fingerprint64(model_->params(), model_->num_params() * sizeof(float));
}

}  // namespace ringtrain::train
