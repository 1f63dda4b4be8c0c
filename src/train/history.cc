#include "train/history.h"

#include "env/file_util.h"
#include "env/storage_error.h"

namespace ringtrain::train {

Status HistoryFile::AppendEpoch(const nlohmann::json& epoch) {
  lines_.push_back(epoch);
  return Write();
}

Status HistoryFile::SetEvaluation(const nlohmann::json& evaluation) {
  evaluation_ = evaluation;
  return Write();
}

Status HistoryFile::Reset(const nlohmann::json& epochs) {
  lines_.assign(epochs.begin(), epochs.end());
  evaluation_ = nullptr;
  return Write();
}

Status HistoryFile::Write() {
  std::string text;
  for (const auto& l : lines_) text += l.dump() + "\n";
  if (!evaluation_.is_null()) text += nlohmann::json{{"evaluation", evaluation_}}.dump() + "\n";
  return env::StorageError(env::WriteFileAtomically(env_, path_, text), "writing the history file", "history_file");
}

}  // namespace ringtrain::train
