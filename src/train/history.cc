#include "train/history.h"

#include "checkpoint/safetensors.h"

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
  return checkpoint::WriteFileAtomically(path_, text).WithContext("writing the history file").About(Subject::kStorage);
}

}  // namespace ringtrain::train
