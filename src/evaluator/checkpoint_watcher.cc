// Finding the next complete checkpoint: model_checkpoint files by epoch, backups by step.
#include "evaluator/checkpoint_watcher.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "inference/tensor_checks.h"

namespace ringtrain::evaluator {
namespace {

namespace fs = std::filesystem;

constexpr const char* kParamsPrefix = "params/";

// backup::BackupStem's names: "ckpt-<12 digits>.json".
int64_t BackupJsonStep(const std::string& name) {
  const std::string prefix = "ckpt-", ext = ".json";
  if (name.size() != prefix.size() + 12 + ext.size()) return -1;
  if (name.compare(0, prefix.size(), prefix) != 0 || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
    return -1;
  }
  int64_t step = 0;
  for (size_t i = prefix.size(); i < prefix.size() + 12; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

// Whether a read failure says the file is not (yet) there or not whole, which waiting can
// change, rather than that the system refuses to read it.
bool Transient(const Status& s) {
  return s.code() == Code::kNotFound || s.code() == Code::kDataLoss || s.code() == Code::kInvalidArgument;
}

Status Refused(const Status& s, const std::string& path) {
  return s.WithContext("the evaluator cannot read '" + path + "'").About(Subject::kStorage);
}

// Reads a model file (model_checkpoint or save_model) whole: tensors and metadata.
StatusOr<Checkpoint> ReadModelFile(env::Env* env, const std::string& path, Source source) {
  RT_ASSIGN_OR_RETURN(std::string bytes, env->ReadFile(path));
  Checkpoint c;
  c.source = source;
  c.path = path;
  std::map<std::string, std::string> metadata;
  RT_RETURN_IF_ERROR(checkpoint::DecodeSafetensors(bytes, &c.weights, &metadata));
  for (const auto& [name, t] : c.weights) {
    RT_RETURN_IF_ERROR(inference::CheckTensorFinite(name, t, path, "the run had diverged when it was written"));
  }
  // The trainer writes "epoch" (and "global_step") into every model_checkpoint file.
  auto number = [&](const char* key, int64_t fallback) {
    auto it = metadata.find(key);
    if (it == metadata.end() || it->second.empty() || it->second.size() > 15) return fallback;
    for (char ch : it->second) {
      if (ch < '0' || ch > '9') return fallback;
    }
    return static_cast<int64_t>(std::stoll(it->second));
  };
  c.epoch = static_cast<int>(number("epoch", 0));
  c.step = number("global_step", -1);
  return c;
}

// A file's inode, size and modification time, "" when it is absent. Outside env::Env on
// purpose: the Env has no stat, and this only decides whether save_model was rewritten
// (env::WriteFileAtomically renames a new file onto it: a new inode).
std::string FileStamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

const char* SourceName(Source s) {
  switch (s) {
    case Source::kModelCheckpoint: return "model_checkpoint";
    case Source::kBackup: return "backup";
    case Source::kSavedModel: return "save_model";
  }
  return "?";
}

StatusOr<CheckpointWatcher> CheckpointWatcher::Create(WatchOptions options, env::Env* env) {
  if (options.model_checkpoint.empty() && options.backup_dir.empty()) {
    return InvalidArgumentError("the evaluator has nothing to watch: the job writes no checkpoints; add "
                                "model_checkpoint (a file per epoch) or backup_and_restore to the job")
        .About(Subject::kConfig);
  }
  if (!options.model_checkpoint.empty()) {
    auto first = backup::FormatCheckpointPath(options.model_checkpoint, 1);
    if (!first.ok()) return first.status().About(Subject::kConfig);
  }
  CheckpointWatcher w(std::move(options), env);
  if (!w.options_.save_model.empty()) w.save_model_at_start_ = FileStamp(w.options_.save_model);
  if (w.options_.steps_per_epoch > 0) w.steps_per_epoch_ = w.options_.steps_per_epoch;
  return w;
}

StatusOr<std::optional<Checkpoint>> CheckpointWatcher::Next(const Position& after) {
  if (after.final) return std::optional<Checkpoint>();
  return options_.model_checkpoint.empty() ? NextBackup(after) : NextModelCheckpoint(after);
}

StatusOr<std::optional<Checkpoint>> CheckpointWatcher::NextModelCheckpoint(const Position& after) {
  // Every epoch's path after the last one evaluated, each once: a pattern without
  // {epoch} names one file that every epoch overwrites, and its metadata says which.
  std::vector<std::pair<int, std::string>> paths;
  std::set<std::string> seen;
  for (int e = after.epoch + 1; e <= options_.epochs; ++e) {
    RT_ASSIGN_OR_RETURN(std::string path, backup::FormatCheckpointPath(options_.model_checkpoint, e));
    if (seen.insert(path).second) paths.emplace_back(e, path);
  }
  std::optional<std::string> unreadable;  // a file that exists but does not check out
  for (const auto& [e, path] : paths) {
    auto exists = env_->FileExists(path);
    if (!exists.ok()) return Refused(exists.status(), path);
    if (!*exists) continue;
    auto c = ReadModelFile(env_, path, Source::kModelCheckpoint);
    if (!c.ok()) {
      if (!Transient(c.status())) return Refused(c.status(), path);
      if (!unreadable) unreadable = path + ": " + c.status().message();
      continue;
    }
    if (c->epoch <= 0) c->epoch = e;
    if (c->epoch <= after.epoch) continue;  // the one file of a pattern without {epoch}, not rewritten yet
    if (unreadable) {
      std::string& w = warned_[*unreadable];
      if (w.empty()) {
        w = *unreadable;
        RT_LOG(WARNING) << "the evaluator skips model checkpoint " << *unreadable << " (a later one is complete)";
      }
    }
    c->final = c->epoch >= options_.epochs;
    return std::optional<Checkpoint>(std::move(c).value());
  }
  return std::optional<Checkpoint>();
}

StatusOr<std::optional<Checkpoint>> CheckpointWatcher::NextBackup(const Position& after) {
  const std::string& dir = options_.backup_dir;
  std::vector<int64_t> steps;
  auto is_dir = env_->IsDirectory(dir);
  if (!is_dir.ok()) return Refused(is_dir.status(), dir);
  if (*is_dir) {
    auto names = env_->GetChildren(dir);
    if (!names.ok() && names.status().code() != Code::kNotFound) return Refused(names.status(), dir);
    if (names.ok()) {
      for (const std::string& name : *names) {
        const int64_t step = BackupJsonStep(name);
        if (step >= 0) steps.push_back(step);
      }
    }
  }
  std::sort(steps.begin(), steps.end());
  if (!steps.empty()) seen_backup_ = true;
  if (steps.empty()) return SavedModel(after);

  std::optional<std::string> unreadable;
  for (int64_t step : steps) {
    if (step <= after.step) continue;
    const std::string stem = (fs::path(dir) / backup::BackupStem(step)).string();
    backup::EncodedBackup encoded;
    auto metadata = env_->ReadFile(stem + ".json");
    auto weights = metadata.ok() ? env_->ReadFile(stem + ".safetensors") : metadata;
    if (!weights.ok()) {
      if (!Transient(weights.status())) return Refused(weights.status(), stem + ".safetensors");
      continue;  // pruned by training since it was listed
    }
    encoded.metadata = std::move(metadata).value();
    encoded.weights = std::move(weights).value();
    // The identity's parts that the evaluator cannot know come from the record; the
    // fingerprint, the worker count and the parameters are checked against this job.
    backup::BackupIdentity id;
    id.job_fingerprint = options_.job_fingerprint;
    id.num_workers = options_.num_workers;
    id.params = options_.params;
    const nlohmann::json record = nlohmann::json::parse(encoded.metadata, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.contains("steps_per_epoch") && record["steps_per_epoch"].is_number_integer()) {
      id.steps_per_epoch = record["steps_per_epoch"].get<int>();
    }
    if (record.is_object() && record.contains("optimizer") && record["optimizer"].is_object() &&
        record["optimizer"].contains("name") && record["optimizer"]["name"].is_string()) {
      id.optimizer_name = record["optimizer"]["name"].get<std::string>();
    }
    auto state = backup::DecodeBackup(id, encoded);
    if (!state.ok()) {
      if (state.status().code() == Code::kFailedPrecondition) {
        return FailedPreconditionError("backup " + stem + ".json is not this job's: " + state.status().message())
            .About(Subject::kStorage);
      }
      if (!unreadable) unreadable = stem + ".json: " + state.status().message();
      continue;
    }
    if (unreadable) {
      std::string& w = warned_[*unreadable];
      if (w.empty()) {
        w = *unreadable;
        RT_LOG(WARNING) << "the evaluator skips backup " << *unreadable << " (a later one is complete)";
      }
    }
    steps_per_epoch_ = id.steps_per_epoch;
    Checkpoint c;
    c.source = Source::kBackup;
    c.path = stem + ".safetensors";
    c.step = state->global_step;
    c.epoch = static_cast<int>(state->global_step / id.steps_per_epoch);
    c.final = state->global_step >= static_cast<int64_t>(options_.epochs) * id.steps_per_epoch;
    for (const backup::ParamSpec& p : options_.params) {
      checkpoint::Tensor t;
      t.shape = p.shape;
      t.data.assign(state->params.begin() + static_cast<std::ptrdiff_t>(p.offset),
                    state->params.begin() + static_cast<std::ptrdiff_t>(p.offset + p.size()));
      c.weights.emplace(p.name, std::move(t));
    }
    return std::optional<Checkpoint>(std::move(c));
  }
  return std::optional<Checkpoint>();
}

StatusOr<std::optional<Checkpoint>> CheckpointWatcher::SavedModel(const Position& after) {
  // Training deletes its backups only after it has saved the model: with none left after
  // one was seen (now or by an earlier run of the evaluator), or a model saved since this
  // watcher started (training finished before any backup was seen), it is final.
  if (options_.save_model.empty()) return std::optional<Checkpoint>();
  if (!seen_backup_ && after.step < 0) {
    const std::string stamp = FileStamp(options_.save_model);
    if (stamp.empty() || stamp == save_model_at_start_) return std::optional<Checkpoint>();
  }
  auto exists = env_->FileExists(options_.save_model);
  if (!exists.ok()) return Refused(exists.status(), options_.save_model);
  if (!*exists) return std::optional<Checkpoint>();
  auto c = ReadModelFile(env_, options_.save_model, Source::kSavedModel);
  if (!c.ok()) {
    if (!Transient(c.status())) return Refused(c.status(), options_.save_model);
    return std::optional<Checkpoint>();
  }
  c->epoch = options_.epochs;
  c->step = steps_per_epoch_ > 0 ? static_cast<int64_t>(options_.epochs) * steps_per_epoch_ : -1;
  c->final = true;
  return std::optional<Checkpoint>(std::move(c).value());
}

std::string CheckpointWatcher::Waiting(const Position& after) const {
  if (!options_.model_checkpoint.empty()) {
    auto path = backup::FormatCheckpointPath(options_.model_checkpoint, after.epoch + 1);
    return "model checkpoint " + (path.ok() ? *path : options_.model_checkpoint) + " (epoch " +
           std::to_string(after.epoch + 1) + " of " + std::to_string(options_.epochs) + ")";
  }
  return "a backup after step " + std::to_string(after.step) + " in " + options_.backup_dir +
         (options_.save_model.empty() ? std::string() : " (or, once training has finished, " + options_.save_model + ")");
}

}  // namespace ringtrain::evaluator
