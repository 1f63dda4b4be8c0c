// The backup directory: writing a backup crash-safely, finding the newest good one,
// and cleaning up after writers that were killed.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "backup/backup.h"
#include "common/logging.h"
#include "env/file_util.h"
#include "env/storage_error.h"

namespace ringtrain::backup {
namespace {

namespace fs = std::filesystem;

constexpr size_t kDigits = 12;
constexpr const char* kJson = ".json";
constexpr const char* kWeights = ".safetensors";

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// What a directory entry is to us. Only names we write are ever touched.
struct Name {
  enum Kind { kOther, kMetadata, kWeightsFile, kTemporary } kind = kOther;
  int64_t step = -1;
};

// "ckpt-<12 digits><ext>" -> its step, or -1.
int64_t StepOf(const std::string& name, const std::string& ext) {
  const std::string prefix = "ckpt-";
  if (name.size() != prefix.size() + kDigits + ext.size()) return -1;
  if (name.compare(0, prefix.size(), prefix) != 0 || name.compare(name.size() - ext.size(), ext.size(), ext) != 0) {
    return -1;
  }
  const std::string digits = name.substr(prefix.size(), kDigits);
  return AllDigits(digits) ? std::stoll(digits) : -1;
}

Name Classify(const std::string& name) {
  if (int64_t s = StepOf(name, kJson); s >= 0) return {Name::kMetadata, s};
  if (int64_t s = StepOf(name, kWeights); s >= 0) return {Name::kWeightsFile, s};
  // env::WriteFileAtomically's temporary files: "<final name>.tmp.<pid>".
  if (env::IsTemporaryName(name)) {
    const std::string target = name.substr(0, name.rfind(".tmp."));
    if (StepOf(target, kJson) >= 0 || StepOf(target, kWeights) >= 0) return {Name::kTemporary, -1};
  }
  return {};
}

struct Listing {
  bool exists = false;
  std::set<int64_t> metadata, weights;  // steps with a .json / .safetensors
  std::vector<std::string> temporary;   // file names
};

// What to tell the user to do about the backup directory's files.
constexpr const char* kSetting = "backup_and_restore.backup_dir";

StatusOr<Listing> List(env::Env* env, const std::string& dir) {
  Listing out;
  RT_ASSIGN_OR_RETURN(const bool exists, env->FileExists(dir));
  if (!exists) return out;
  RT_ASSIGN_OR_RETURN(const bool is_dir, env->IsDirectory(dir));
  if (!is_dir) {
    return FailedPreconditionError("backup_dir '" + dir + "' exists but is not a directory; point " + kSetting +
                                   " elsewhere");
  }
  out.exists = true;
  RT_ASSIGN_OR_RETURN(const std::vector<std::string> names, env->GetChildren(dir));
  for (const std::string& name : names) {
    const Name n = Classify(name);
    if (n.kind == Name::kMetadata) out.metadata.insert(n.step);
    if (n.kind == Name::kWeightsFile) out.weights.insert(n.step);
    if (n.kind == Name::kTemporary) out.temporary.push_back(name);
  }
  return out;
}

std::string PathOf(const std::string& dir, int64_t step, const char* ext) {
  return (fs::path(dir) / (BackupStem(step) + ext)).string();
}

Status Remove(env::Env* env, const std::string& path) {
  const Status s = env->DeleteFile(path);
  return s.code() == Code::kNotFound ? Status::Ok() : s;
}

// Deletes every file of ours except the backups at the steps in `keep`. A backup's
// JSON goes before its weights, so that a crash in between leaves an incomplete
// backup (ignored) rather than a corrupted one (warned about).
Status Prune(env::Env* env, const std::string& dir, const std::set<int64_t>& keep) {
  RT_ASSIGN_OR_RETURN(Listing l, List(env, dir));
  for (int64_t step : l.metadata) {
    if (!keep.count(step)) RT_RETURN_IF_ERROR(Remove(env, PathOf(dir, step, kJson)));
  }
  for (int64_t step : l.weights) {
    if (!keep.count(step)) RT_RETURN_IF_ERROR(Remove(env, PathOf(dir, step, kWeights)));
  }
  for (const std::string& name : l.temporary) RT_RETURN_IF_ERROR(Remove(env, (fs::path(dir) / name).string()));
  return Status::Ok();
}

// Reads and verifies the backup at `step`. FAILED_PRECONDITION for another job's
// backup; any other error means this backup is corrupted.
StatusOr<TrainState> LoadOne(env::Env* env, const std::string& dir, int64_t step, const BackupIdentity& identity) {
  EncodedBackup encoded;
  RT_ASSIGN_OR_RETURN(encoded.metadata, env->ReadFile(PathOf(dir, step, kJson)));
  auto weights = env->ReadFile(PathOf(dir, step, kWeights));
  if (!weights.ok() && weights.status().code() == Code::kNotFound) {
    // Still decode the metadata alone: another job's backup is refused even when
    // its weights are gone, and only our own is reported as corrupted.
    auto decoded = DecodeBackup(identity, encoded);
    if (decoded.status().code() == Code::kFailedPrecondition) return decoded.status();
    return DataLossError("its weights file " + BackupStem(step) + kWeights + " is missing");
  }
  if (!weights.ok()) return weights.status();
  encoded.weights = std::move(weights).value();
  RT_ASSIGN_OR_RETURN(TrainState state, DecodeBackup(identity, encoded));
  if (state.global_step != step) {
    return DataLossError("it holds global_step " + std::to_string(state.global_step) + ", not the " +
                         std::to_string(step) + " its name says");
  }
  return state;
}

}  // namespace

Status WriteBackup(const std::string& dir, const BackupIdentity& identity, const TrainState& state, env::Env* env) {
  RT_ASSIGN_OR_RETURN(EncodedBackup encoded, EncodeBackup(identity, state));
  const int64_t step = state.global_step;
  auto failed = [&](const Status& s) {
    return env::StorageError(s, "backup of step " + std::to_string(step) + " to '" + dir + "' failed", kSetting);
  };
  // Weights first: the JSON is the commit record, so a backup exists only once both do.
  Status s = env::WriteFileAtomically(env, PathOf(dir, step, kWeights), encoded.weights);
  if (s.ok()) s = env::WriteFileAtomically(env, PathOf(dir, step, kJson), encoded.metadata);
  if (!s.ok()) return failed(s);

  // Keep this backup and the newest complete one before it. A backup newer than this
  // one belongs to a timeline that was abandoned (training resumed from an older
  // backup, because the newer one was corrupted or because of a rollback); keeping it
  // would make every reader prefer it to the one just written.
  StatusOr<Listing> l = List(env, dir);
  if (!l.ok()) return failed(l.status());
  std::set<int64_t> keep = {step};
  for (auto it = l->metadata.rbegin(); it != l->metadata.rend(); ++it) {
    if (*it < step && l->weights.count(*it)) {
      keep.insert(*it);
      break;
    }
  }
  s = Prune(env, dir, keep);
  if (!s.ok()) return failed(s.WithContext("wrote it, but cannot delete the older backups"));
  return Status::Ok();
}

StatusOr<std::optional<LoadedBackup>> LoadNewestBackup(const std::string& dir, const BackupIdentity& identity,
                                                       std::vector<std::string>* warnings, env::Env* env) {
  StatusOr<Listing> l = List(env, dir);
  if (!l.ok()) return env::StorageError(l.status(), "cannot resume from backup_dir '" + dir + "'", kSetting);
  for (auto it = l->metadata.rbegin(); it != l->metadata.rend(); ++it) {
    const std::string path = PathOf(dir, *it, kJson);
    auto state = LoadOne(env, dir, *it, identity);
    if (state.ok()) return std::optional<LoadedBackup>(LoadedBackup{std::move(state).value(), path});
    if (state.status().code() == Code::kFailedPrecondition) {
      return FailedPreconditionError("cannot resume from backup_dir '" + dir + "': backup " + path + " is refused: " +
                                     state.status().message())
          .About(Subject::kStorage);
    }
    // A file the system refuses to read (permissions, an I/O error) says nothing about
    // the backup: skipping it could resume from an older one, and the next write would
    // then delete this good one as an abandoned timeline.
    if (state.status().code() == Code::kPermissionDenied || state.status().code() == Code::kInternal) {
      return env::StorageError(state.status(), "cannot resume from backup_dir '" + dir + "'", kSetting);
    }
    const bool older = std::next(it) != l->metadata.rend();
    std::string warning = "Backup " + path + " is corrupted (" + state.status().message() + "); " +
                          (older ? "using the previous backup instead." : "no older backup is left to use.");
    RT_LOG(WARNING) << warning;
    if (warnings) warnings->push_back(std::move(warning));
  }
  return std::optional<LoadedBackup>();
}

Status DeleteBackups(const std::string& dir, env::Env* env) {
  auto failed = [&](const Status& s) {
    return env::StorageError(s, "cannot delete the backups in '" + dir + "'", kSetting);
  };
  StatusOr<Listing> l = List(env, dir);
  if (!l.ok()) return failed(l.status());
  if (!l->exists) return Status::Ok();
  if (Status s = Prune(env, dir, {}); !s.ok()) return failed(s);
  // Only an empty directory goes: anything else in it is not ours to delete.
  const Status removed = env->DeleteDir(dir);
  if (!removed.ok() && removed.code() != Code::kFailedPrecondition && removed.code() != Code::kNotFound) {
    return failed(removed.WithContext("deleted the backups but cannot remove the directory"));
  }
  return Status::Ok();
}

}  // namespace ringtrain::backup
