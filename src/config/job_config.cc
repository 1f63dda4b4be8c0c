#include "config/job_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "common/file.h"
#include "common/fingerprint.h"
#include "common/json.h"
#include "common/logging.h"
#include "nn/keras/model_file.h"
#include "nn/losses/loss.h"
#include "nn/metrics/metrics.h"

namespace ringtrain::config {
namespace {

Status BadJob(const std::string& what) { return InvalidArgumentError("job: " + what); }

Status CheckKeys(const nlohmann::json& obj, const std::string& where, const std::set<std::string>& allowed) {
  for (auto& [key, value] : obj.items()) {
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return BadJob("unknown field '" + where + key + "'; known fields here: " + list);
    }
  }
  return Status::Ok();
}

// Integers of the job (batch size, epochs, steps, frequencies) are at most 10^9.
constexpr int64_t kMaxCount = 1'000'000'000;
// communication.timeout_seconds: a year is already no deadline at all; beyond that the
// deadline arithmetic (milliseconds in 64 bits) would overflow.
constexpr double kMaxTimeoutSeconds = 365.0 * 24 * 3600;

StatusOr<int> PositiveInt(const nlohmann::json& j, const std::string& name) {
  const std::optional<int64_t> v = JsonInt(j, 1, kMaxCount);
  if (!v) return BadJob("'" + name + "' must be a positive integer (at most 10^9), got " + JsonBrief(j));
  return static_cast<int>(*v);
}

StatusOr<std::string> String(const nlohmann::json& j, const std::string& name) {
  if (!j.is_string() || j.get<std::string>().empty()) return BadJob("'" + name + "' must be a non-empty string");
  return j.get<std::string>();
}

Status ParseFaultTolerance(const nlohmann::json& j, JobConfig* job) {
  if (j.contains("backup_and_restore")) {
    const auto& b = j["backup_and_restore"];
    if (!b.is_object()) return BadJob("'backup_and_restore' must be an object like {\"backup_dir\": \"backup\"}");
    RT_RETURN_IF_ERROR(CheckKeys(b, "backup_and_restore.", {"backup_dir", "save_freq", "delete_checkpoint"}));
    if (!b.contains("backup_dir")) return BadJob("missing required field 'backup_and_restore.backup_dir'");
    RT_ASSIGN_OR_RETURN(std::string dir, String(b["backup_dir"], "backup_and_restore.backup_dir"));
    job->backup.backup_dir = job->Resolve(dir);
    if (b.contains("save_freq")) {
      const auto& f = b["save_freq"];
      if (f.is_string() && f.get<std::string>() == "epoch") {
        job->backup.save_freq_steps = 0;
      } else if (f.is_number_integer()) {
        RT_ASSIGN_OR_RETURN(job->backup.save_freq_steps, PositiveInt(f, "backup_and_restore.save_freq"));
      } else {
        return BadJob("'backup_and_restore.save_freq' must be \"epoch\" or a positive number of steps, got " +
                   JsonBrief(f));
      }
    }
    if (b.contains("delete_checkpoint")) {
      if (!b["delete_checkpoint"].is_boolean()) return BadJob("'backup_and_restore.delete_checkpoint' must be true or false");
      job->backup.delete_checkpoint = b["delete_checkpoint"].get<bool>();
    }
  }
  if (j.contains("model_checkpoint")) {
    const auto& m = j["model_checkpoint"];
    if (!m.is_object()) return BadJob("'model_checkpoint' must be an object like {\"filepath\": \"ckpt/ckpt_{epoch}.safetensors\"}");
    RT_RETURN_IF_ERROR(CheckKeys(m, "model_checkpoint.", {"filepath"}));
    if (!m.contains("filepath")) return BadJob("missing required field 'model_checkpoint.filepath'");
    RT_ASSIGN_OR_RETURN(std::string p, String(m["filepath"], "model_checkpoint.filepath"));
    job->model_checkpoint = job->Resolve(p);
  }
  if (j.contains("recovery")) {
    const auto& r = j["recovery"];
    if (r == "in_place") {
      job->recovery = RecoveryMode::kInPlace;
    } else if (r == "restart") {
      job->recovery = RecoveryMode::kRestart;
    } else {
      return BadJob("'recovery' must be \"in_place\" (survivors wait for the failed task and go on) or \"restart\" "
                 "(every task exits so that a supervisor restarts them all), got " + JsonBrief(r));
    }
  }
  if (j.contains("elastic") && !j["elastic"].is_null()) {
    const auto& e = j["elastic"];
    if (!e.is_object()) return BadJob("'elastic' must be an object like {\"min_workers\": 2, \"wait_s\": 30}, got " + JsonBrief(e));
    RT_RETURN_IF_ERROR(CheckKeys(e, "elastic.", {"min_workers", "wait_s"}));
    job->elastic.enabled = true;
    if (e.contains("min_workers")) {
      RT_ASSIGN_OR_RETURN(job->elastic.min_workers, PositiveInt(e["min_workers"], "elastic.min_workers"));
    }
    if (e.contains("wait_s")) {
      const auto& w = e["wait_s"];
      if (!w.is_number() || w.get<double>() < 0 || w.get<double>() > 86400) {
        return BadJob("'elastic.wait_s' must be a number of seconds in 0..86400, got " + JsonBrief(w));
      }
      job->elastic.wait_s = w.get<double>();
    }
    if (job->recovery != RecoveryMode::kInPlace) {
      return BadJob("'elastic' needs \"recovery\": \"in_place\" (the survivors keep their processes); with \"restart\" "
                 "every task exits at a failure");
    }
  }
  return Status::Ok();
}

// The Keras fit() conveniences: lr_schedule, validation_freq, tensorboard_dir. Runs after
// "data" is parsed (validation_freq needs to know whether data.eval exists).
Status ParseFitOptions(const nlohmann::json& j, JobConfig* job) {
  if (j.contains("lr_schedule") && !j["lr_schedule"].is_null()) {
    if (!j["lr_schedule"].is_object()) {
      return BadJob("'lr_schedule' must be an object like {\"type\": \"piecewise_constant\", \"unit\": \"epoch\", "
                 "\"boundaries\": [3, 7], \"values\": [1e-3, 1e-4, 1e-5]}, got " + JsonBrief(j["lr_schedule"]));
    }
    job->lr_schedule = j["lr_schedule"];
  }
  if (j.contains("validation_freq") && !j["validation_freq"].is_null()) {
    const auto& f = j["validation_freq"];
    const std::string usage =
        "'validation_freq' must be an integer k >= 0 (evaluate data.eval after every k-th epoch; 0 = never) or a "
        "list of increasing 1-based epoch numbers such as [1, 5, 10], got ";
    if (f.is_number_integer()) {
      const std::optional<int64_t> k = JsonInt(f, 0, kMaxCount);
      if (!k) return BadJob(usage + JsonBrief(f));
      job->validation_freq = static_cast<int>(*k);
    } else if (f.is_array()) {
      for (const auto& e : f) {
        const std::optional<int64_t> epoch = JsonInt(e, 1, kMaxCount);
        if (!epoch) return BadJob(usage + JsonBrief(f) + " (entry " + JsonBrief(e) + " is not a positive integer)");
        const int epoch1 = static_cast<int>(*epoch);
        if (!job->validation_epochs.empty() && epoch1 <= job->validation_epochs.back()) {
          return BadJob(usage + JsonBrief(f) + " (the epochs must be strictly increasing)");
        }
        job->validation_epochs.push_back(epoch1);
      }
    } else {
      return BadJob(usage + JsonBrief(f));
    }
    const bool on = job->validation_freq > 0 || !job->validation_epochs.empty();
    if (on && job->eval_data.is_null()) {
      return BadJob("'validation_freq' needs evaluation data: add a 'data.eval' section (like data.train) or remove "
                 "validation_freq");
    }
  }
  if (j.contains("tensorboard_dir")) {
    RT_ASSIGN_OR_RETURN(std::string p, String(j["tensorboard_dir"], "tensorboard_dir"));
    job->tensorboard_dir = job->Resolve(p);
  }
  if (j.contains("device")) {
    RT_ASSIGN_OR_RETURN(std::string d, String(j["device"], "device"));
    std::transform(d.begin(), d.end(), d.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (d != "auto" && d != "cpu" && d != "gpu") {
      return BadJob("'device' must be \"auto\", \"cpu\" or \"gpu\", got \"" + j["device"].get<std::string>() + "\"");
    }
    job->device = d;
  }
  return Status::Ok();
}

// Keras refuses a loss whose targets do not match the labels' shape; so does the job.
Status CheckLabelMode(const std::string& loss, const nlohmann::json& train) {
  const auto mode = train.find("label_mode");
  const std::string label_mode = mode != train.end() && mode->is_string() ? mode->get<std::string>() : "int";
  if (loss == "categorical_crossentropy" && label_mode != "categorical") {
    return BadJob("loss.type \"categorical_crossentropy\" needs one-hot labels but data.train.label_mode is \"" +
               label_mode +
               "\" (Keras: Arguments `target` and `output` must have the same shape. Received: "
               "target.shape=(None,), output.shape=(None, num_classes)); set data.train.label_mode to "
               "\"categorical\" or use loss.type \"sparse_categorical_crossentropy\"");
  }
  if (loss == "sparse_categorical_crossentropy" && label_mode == "categorical") {
    return BadJob("loss.type \"sparse_categorical_crossentropy\" needs integer labels but data.train.label_mode is "
               "\"categorical\" (Keras: Argument `output` must have rank (ndim) `target.ndim - 1`. Received: "
               "target.shape=(None, num_classes), output.shape=(None, num_classes)); use loss.type "
               "\"categorical_crossentropy\" or data.train.label_mode \"int\"");
  }
  return Status::Ok();
}

// The loss's Keras function name ("sparse_categorical_crossentropy"); "" if it does not parse.
std::string LossName(const nlohmann::json& loss) {
  auto parsed = nn::Loss::FromJson(loss, 2);
  return parsed.ok() ? (*parsed)->name() : "";
}

// "loss" and "metrics", checked as far as they can be before the model is built (its
// output size decides the rest: the trainer checks that with the same messages).
// One loss and its metrics, checked as far as they can be without the model.
Status CheckLossAndMetrics(const nlohmann::json& loss_json, const nlohmann::json& metrics);

// A per-output "loss" (a list, or an object keyed by output names), per-output "metrics"
// and "loss_weights": each output's entry checked as one loss; the names wait for the
// model (the trainer matches them against its outputs).
Status CheckPerOutput(JobConfig* job) {
  const nlohmann::json& loss = job->loss;
  const bool loss_per_output = nn::LossPerOutput(loss);
  if (loss_per_output && loss.empty()) {
    return InvalidArgumentError("loss: an empty " + std::string(loss.is_array() ? "list" : "object") +
                                "; give one loss, or one per model output").About(Subject::kConfig);
  }
  std::vector<nlohmann::json> losses;
  if (loss_per_output) {
    for (const auto& [key, v] : loss.items()) {
      if (v.is_null()) continue;
      auto parsed = nn::Loss::FromJson(v, 2);
      if (!parsed.ok() && !nn::Loss::FromJson(v, 1).ok()) {
        return Status(parsed.status().code(), "loss[" + key + "]: " + parsed.status().message(), Subject::kConfig);
      }
      losses.push_back(v);
    }
  }
  const nlohmann::json& w = job->loss_weights;
  const bool weights_ok = w.is_null() || ((w.is_array() || w.is_object()) && !w.empty() &&
                                          std::all_of(w.begin(), w.end(), [](const nlohmann::json& x) {
                                            return x.is_number() && x.get<double>() >= 0 && x.get<double>() <= 1e30;
                                          }));
  if (!weights_ok) {
    return InvalidArgumentError("loss_weights: must be a list of numbers >= 0 (one per model output) or an object of "
                                "them by output name, got " + JsonBrief(w)).About(Subject::kConfig);
  }
  const nlohmann::json& m = job->metrics;
  if (!nn::MetricsPerOutput(m)) {
    if (!loss_per_output) return CheckLossAndMetrics(loss, m);
    return CheckLossAndMetrics(losses.empty() ? nlohmann::json("sparse_categorical_crossentropy") : losses[0], m);
  }
  for (const auto& [key, list] : m.items()) {
    if (list.is_null()) continue;
    if (!list.is_array()) {
      return InvalidArgumentError("metrics[" + key + "]: must be a list of metrics for that output, got " +
                                  JsonBrief(list)).About(Subject::kConfig);
    }
    // The output's own loss where the loss names one per output ("accuracy" resolves by it).
    nlohmann::json l = loss;
    if (loss_per_output) {
      l = losses.empty() ? nlohmann::json("sparse_categorical_crossentropy") : losses[0];
      if (loss.is_object() && loss.contains(key) && !loss[key].is_null()) l = loss[key];
      if (loss.is_array() && m.is_array()) {
        const size_t index = std::stoul(key);  // an array's items are keyed "0", "1", ...
        if (index < loss.size() && !loss[index].is_null()) l = loss[index];
      }
    }
    Status s = CheckLossAndMetrics(l, list);
    if (!s.ok()) return Status(s.code(), "metrics[" + key + "]: " + s.message(), Subject::kConfig);
  }
  return Status::Ok();
}

Status ParseLossAndMetrics(const nlohmann::json& j, JobConfig* job) {
  // Absent: what ringtrain has always trained with, the compact form's default (a model
  // ending in logits). Given, it follows Keras (from_logits false unless it says true).
  job->loss = j.value("loss", nlohmann::json{{"type", "sparse_categorical_crossentropy"}, {"from_logits", true}});
  job->metrics = j.value("metrics", nlohmann::json::array({"accuracy"}));
  if (job->metrics.is_null()) job->metrics = nlohmann::json::array();
  job->loss_weights = j.value("loss_weights", nlohmann::json());
  if (nn::LossPerOutput(job->loss) || !job->loss_weights.is_null() || nn::MetricsPerOutput(job->metrics)) {
    return CheckPerOutput(job);
  }
  return CheckLossAndMetrics(job->loss, job->metrics);
}

Status CheckLossAndMetrics(const nlohmann::json& loss_json, const nlohmann::json& metrics) {
  JobConfig checked;
  JobConfig* job = &checked;
  job->loss = loss_json;
  job->metrics = metrics;
  // Every loss takes a model with 2 outputs: its type and arguments are checked here.
  auto loss = nn::Loss::FromJson(job->loss, 2);
  if (!loss.ok()) return loss.status().About(Subject::kConfig);
  // A metric may need 1 output (auc) or several (top-k): it must fit one of them.
  auto with_two = nn::MetricsFromJson(job->metrics, job->loss, 2);
  if (with_two.ok()) return Status::Ok();
  auto with_one = nn::MetricsFromJson(job->metrics, nlohmann::json("binary_crossentropy"), 1);
  if (with_one.ok()) return Status::Ok();
  // A metric that names its class count (MeanIoU's num_classes) needs that many outputs.
  if (job->metrics.is_array()) {
    for (const nlohmann::json& m : job->metrics) {
      const nlohmann::json* args = m.is_object() && m.contains("config") ? &m["config"] : &m;
      if (!args->is_object() || !args->contains("num_classes") || !(*args)["num_classes"].is_number_integer()) {
        continue;
      }
      const int64_t n = (*args)["num_classes"].get<int64_t>();
      if (n > 2 && n <= 65536 && nn::MetricsFromJson(job->metrics, job->loss, static_cast<int>(n)).ok()) {
        return Status::Ok();
      }
    }
  }
  // Report the failure for the output count the loss suggests.
  const bool one_output_loss = nn::Loss::FromJson(job->loss, 1).ok();
  return (one_output_loss ? with_one.status() : with_two.status()).About(Subject::kConfig);
}

// "model": {"keras_json": PATH | {...}}: Keras' model JSON (model.to_json()), that JSON
// as a JSON string, or a TensorFlow.js model.json (nn/keras/model_file.h), translated
// into the compact form that the rest of ringtrain reads.
StatusOr<nlohmann::json> KerasModel(const nlohmann::json& model, const JobConfig& job) {
  for (auto& [key, value] : model.items()) {
    if (key != "keras_json") {
      return BadJob("'model.keras_json' describes the whole model: remove 'model." + key +
                 "' (or drop keras_json and describe the model with input_shape and layers)");
    }
  }
  const nlohmann::json& source = model["keras_json"];
  if (source.is_string() && !source.get<std::string>().empty()) {
    const std::string path = job.Resolve(source.get<std::string>());
    auto file = nn::ReadKerasModelFile(path, kMaxKerasJsonFileBytes);
    if (!file.ok() && file.status().subject() == Subject::kStorage) {
      return BadJob("'model.keras_json' file '" + path + "' cannot be read (" + file.status().message() +
                 "); give the path (relative to the job file) of the file model.to_json() wrote");
    }
    if (!file.ok()) {
      const std::string m = file.status().message();
      return BadJob(m + (m.find(path) == std::string::npos ? " (in '" + path + "')" : ""));
    }
    for (const std::string& line : file->info) RT_LOG(INFO) << line;
    return std::move(file->compact);
  }
  if (!source.is_object()) {
    return BadJob("'model.keras_json' must be the path of the file model.to_json() writes, or that JSON object inline, "
               "got " + JsonBrief(source));
  }
  auto inline_model = nn::KerasModelFromJson(source, job.base_dir);
  if (!inline_model.ok()) return BadJob(inline_model.status().message());
  for (const std::string& line : inline_model->info) RT_LOG(INFO) << "model.keras_json (inline) " << line;
  return std::move(inline_model->compact);
}

Status ParseInto(const nlohmann::json& j, JobConfig* job) {
  static const std::set<std::string> kTop = {
      "model", "loss", "optimizer", "data", "batch_size_per_worker", "epochs", "steps_per_epoch", "seed",
      "communication", "save_model", "history_file", "name", "description", "backup_and_restore",
      "model_checkpoint", "recovery", "lr_schedule", "validation_freq", "tensorboard_dir", "device",
      "initial_weights", "skip_mismatch", "metrics", "loss_weights", "elastic"};
  RT_RETURN_IF_ERROR(CheckKeys(j, "", kTop));
  for (const char* required : {"model", "optimizer", "data", "batch_size_per_worker"}) {
    if (!j.contains(required)) return BadJob(std::string("missing required field '") + required + "'");
  }
  if (!j["model"].is_object()) return BadJob("'model' must be an object with input_shape and layers");
  if (j["model"].contains("keras_json")) {
    RT_ASSIGN_OR_RETURN(job->model, KerasModel(j["model"], *job));
  } else {
    job->model = j["model"];
  }
  if (!j["optimizer"].is_object()) return BadJob("'optimizer' must be an object like {\"type\": \"sgd\", ...}");
  job->optimizer = j["optimizer"];

  RT_RETURN_IF_ERROR(ParseLossAndMetrics(j, job));

  const auto& data = j["data"];
  if (!data.is_object()) return BadJob("'data' must be an object with 'train' (and optionally 'eval')");
  RT_RETURN_IF_ERROR(CheckKeys(data, "data.", {"train", "eval", "auto_shard_policy", "pipeline"}));
  if (!data.contains("train") || !data["train"].is_object()) return BadJob("missing required object 'data.train'");
  job->train_data = data["train"];
  RT_RETURN_IF_ERROR(CheckLabelMode(LossName(job->loss), job->train_data));
  if (data.contains("pipeline")) {
    RT_ASSIGN_OR_RETURN(job->pipeline, data::ParsePipelineOptions(data["pipeline"], job->base_dir, "data.pipeline"));
  }
  if (data.contains("eval")) {
    if (!data["eval"].is_object()) return BadJob("'data.eval' must be an object");
    job->eval_data = data["eval"];
  }
  if (data.contains("auto_shard_policy")) {
    RT_ASSIGN_OR_RETURN(job->auto_shard_policy, String(data["auto_shard_policy"], "data.auto_shard_policy"));
  }
  for (const char* split : {"train", "eval"}) {
    const nlohmann::json& d = split[0] == 't' ? job->train_data : job->eval_data;
    if (d.is_object() && d.contains("labels") && d["labels"].is_null()) {
      return BadJob(std::string("data.") + split + ".labels is null (images without labels): training and "
                 "evaluation need labels; that form is for `ringtrain predict --input`");
    }
  }

  if (j.contains("initial_weights") && !j["initial_weights"].is_null()) {
    const auto& w = j["initial_weights"];
    if (!w.is_string() || w.get<std::string>().empty()) {
      return BadJob("'initial_weights' must be the path of a safetensors file of pretrained weights, got " + JsonBrief(w));
    }
    job->initial_weights = job->Resolve(w.get<std::string>());
  }
  if (j.contains("skip_mismatch")) {
    if (!j["skip_mismatch"].is_boolean()) {
      return BadJob("'skip_mismatch' must be true or false, got " + JsonBrief(j["skip_mismatch"]));
    }
    if (job->initial_weights.empty()) return BadJob("'skip_mismatch' is given without 'initial_weights'");
    job->skip_mismatch = j["skip_mismatch"].get<bool>();
  }
  RT_ASSIGN_OR_RETURN(job->batch_size_per_worker, PositiveInt(j["batch_size_per_worker"], "batch_size_per_worker"));
  if (j.contains("epochs")) {
    RT_ASSIGN_OR_RETURN(job->epochs, PositiveInt(j["epochs"], "epochs"));
  }
  if (j.contains("steps_per_epoch") && !j["steps_per_epoch"].is_null()) {
    RT_ASSIGN_OR_RETURN(job->steps_per_epoch, PositiveInt(j["steps_per_epoch"], "steps_per_epoch"));
  }
  if (j.contains("seed")) {
    const std::optional<uint64_t> seed = JsonUint(j["seed"]);
    if (!seed) return BadJob("'seed' must be a non-negative integer below 2^64, got " + JsonBrief(j["seed"]));
    job->seed = *seed;
  }
  if (j.contains("communication")) {
    const auto& c = j["communication"];
    if (!c.is_object()) return BadJob("'communication' must be an object like {\"implementation\": \"AUTO\"}");
    RT_RETURN_IF_ERROR(CheckKeys(c, "communication.", {"implementation", "timeout_seconds", "bytes_per_pack"}));
    if (c.contains("bytes_per_pack")) {
      const std::optional<int64_t> bytes = JsonInt(c["bytes_per_pack"], 0, int64_t{1} << 40);
      if (!bytes) {
        return BadJob("'communication.bytes_per_pack' must be an integer from 0 (one pack) to 2^40, got " +
                   JsonBrief(c["bytes_per_pack"]));
      }
      job->communication.bytes_per_pack = static_cast<size_t>(*bytes);
    }
    if (c.contains("implementation")) {
      RT_ASSIGN_OR_RETURN(job->communication.implementation, String(c["implementation"], "communication.implementation"));
    }
    if (c.contains("timeout_seconds")) {
      const std::optional<double> t = JsonNumber(c["timeout_seconds"]);
      if (!t || *t < 0 || *t > kMaxTimeoutSeconds) {
        return BadJob("'communication.timeout_seconds' must be a number of seconds from 0 (the default) to 31536000 "
                   "(a year), got " + JsonBrief(c["timeout_seconds"]));
      }
      job->communication.timeout_seconds = *t;
    }
  }
  if (j.contains("save_model")) {
    RT_ASSIGN_OR_RETURN(std::string p, String(j["save_model"], "save_model"));
    job->save_model = job->Resolve(p);
  }
  if (j.contains("history_file")) {
    RT_ASSIGN_OR_RETURN(std::string p, String(j["history_file"], "history_file"));
    job->history_file = job->Resolve(p);
  }
  RT_RETURN_IF_ERROR(ParseFitOptions(j, job));
  return ParseFaultTolerance(j, job);
}

}  // namespace

std::string JobConfig::Resolve(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(base_dir) / p).lexically_normal().string();
}

bool JobConfig::ValidateAfterEpoch(int epoch1) const {
  if (epoch1 <= 0) return false;
  if (validation_freq > 0) return epoch1 % validation_freq == 0;
  return std::binary_search(validation_epochs.begin(), validation_epochs.end(), epoch1);
}

std::string JobConfig::TrajectoryFingerprint() const {
  nlohmann::json t = raw;
  // Evaluation (validation_freq) only reads the weights, and TensorBoard only writes
  // files: neither changes the updates. lr_schedule does, so it stays in. The device
  // changes only the rounding of the gradients (the update is the same bits
  // everywhere), so a backup moves between CPU and GPU.
  for (const char* k : {"epochs", "backup_and_restore", "model_checkpoint", "recovery", "elastic", "communication", "save_model",
                        "history_file", "name", "description", "validation_freq", "tensorboard_dir", "device"}) {
    t.erase(k);
  }
  if (lr_schedule.is_null()) t.erase("lr_schedule");  // "lr_schedule": null is the same job as leaving it out
  // data.pipeline (threads, prefetch, cache) changes how fast batches come, never which.
  if (t.contains("data") && t["data"].is_object()) {
    t["data"].erase("eval");
    t["data"].erase("pipeline");
  }
  // Defaults made explicit, so that leaving a field out and writing its default agree.
  t["loss"] = loss;
  t["data"]["auto_shard_policy"] = auto_shard_policy;
  t["steps_per_epoch"] = steps_per_epoch;
  t["seed"] = seed;
  const std::string dumped = t.dump();
  return FingerprintHex(Fingerprint64(dumped.data(), dumped.size()));
}

StatusOr<JobConfig> ParseJobConfig(const std::string& text, const std::string& base_dir) {
  JobConfig job;
  job.base_dir = base_dir.empty() ? "." : base_dir;
  auto parsed = ParseJson(text, "job");
  if (!parsed.ok()) return parsed.status().About(Subject::kConfig);
  job.raw = std::move(parsed).value();
  if (!job.raw.is_object()) return BadJob("the job file must hold a JSON object").About(Subject::kConfig);
  try {
    Status s = ParseInto(job.raw, &job);
    if (!s.ok()) return s.About(Subject::kConfig);
    // The workers compare `raw` and fingerprint it: it must hold the model itself, not
    // the path of a file that may differ between machines.
    if (job.raw["model"].contains("keras_json")) job.raw["model"] = job.model;
  } catch (const std::exception& e) {  // a backstop: the readers above check types first
    return BadJob(std::string("malformed field (") + e.what() + ")").About(Subject::kConfig);
  }
  return job;
}

StatusOr<JobConfig> LoadJobConfig(const std::string& path) {
  auto text = ReadFile(path, kMaxJobFileBytes, "a job file");
  if (!text.ok()) {
    return InvalidArgumentError("job file '" + path + "' cannot be read (" + text.status().message() +
                                "); check the path given to --job")
        .About(Subject::kConfig);
  }
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
  auto job = ParseJobConfig(*text, dir.string());
  if (!job.ok()) return job.status().WithContext(path);
  return job;
}

}  // namespace ringtrain::config
