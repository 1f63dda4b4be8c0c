#include "evaluator/eval_history.h"

#include <sstream>

#include "env/file_util.h"
#include "env/storage_error.h"

namespace ringtrain::evaluator {
namespace {

// A record must carry what position() reads, with the right types.
bool WellFormed(const nlohmann::json& r) {
  return r.is_object() && r.contains("epoch") && r["epoch"].is_number_integer() && r.contains("step") &&
         r["step"].is_number_integer() && r.contains("final") && r["final"].is_boolean();
}

}  // namespace

StatusOr<EvalHistory> EvalHistory::Open(const std::string& path, env::Env* env) {
  EvalHistory h(path, env);
  auto text = env->ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) return h;
    return text.status().WithContext("cannot read the evaluator's history").About(Subject::kStorage);
  }
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!WellFormed(r)) {
      return DataLossError("the evaluator's history '" + path + "' line " + std::to_string(number) +
                           " is not a record the evaluator writes; delete the file to evaluate every checkpoint "
                           "again, or pass another --eval_history")
          .About(Subject::kStorage);
    }
    h.records_.push_back(std::move(r));
  }
  return h;
}

Position EvalHistory::position() const {
  Position p;
  if (records_.empty()) return p;
  const nlohmann::json& last = records_.back();
  p.epoch = last["epoch"].get<int>();
  p.step = last["step"].get<int64_t>();
  p.final = last["final"].get<bool>();
  return p;
}

Status EvalHistory::Append(const nlohmann::json& record) {
  if (!WellFormed(record)) return InvalidArgumentError("an evaluation record needs epoch, step and final");
  std::string text;
  for (const auto& r : records_) text += r.dump() + "\n";
  text += record.dump() + "\n";
  Status s = env::WriteFileAtomically(env_, path_, text);
  if (!s.ok()) return env::StorageError(s, "cannot write the evaluator's history", "--eval_history");
  records_.push_back(record);
  return Status::Ok();
}

}  // namespace ringtrain::evaluator
