#include "coordination/job_diff.h"

#include <nlohmann/json.hpp>

#include "common/json.h"

namespace ringtrain::coordination {
namespace {

using nlohmann::json;

constexpr const char* kAbsent = "<absent>";

StatusOr<json> Parse(const std::string& text, const std::string& whose) {
  const std::string what = whose + " job";
  auto parsed = ParseJson(text, what);
  if (!parsed.ok()) {
    // "<whose> job: not valid JSON (...)" -> "<whose> job is not valid JSON (...)".
    return InvalidArgumentError(what + " is" + parsed.status().message().substr(what.size() + 1) +
                                "; pass the job file's parsed content");
  }
  return parsed;
}

// The value at `pointer` in `doc` as compact JSON, or "<absent>".
std::string ValueAt(const json& doc, const std::string& pointer) {
  try {
    json::json_pointer ptr(pointer);
    if (!doc.contains(ptr)) return kAbsent;
    std::string text = doc.at(ptr).dump();
    // A whole sub-object can be long; the pointer already says where to look.
    constexpr size_t kMaxShown = 120;
    if (text.size() > kMaxShown) text = text.substr(0, kMaxShown) + "...";
    return text;
  } catch (const json::exception&) {
    return kAbsent;  // e.g. an array index that does not exist in this document
  }
}

}  // namespace

Status ValidateJobJson(const std::string& json_text, const std::string& whose) {
  return Parse(json_text, whose).status();
}

Status CompareJobs(const std::string& chief_job_json, const std::string& task_job_json,
                   const std::string& task) {
  RT_ASSIGN_OR_RETURN(json chief, Parse(chief_job_json, "the chief's"));
  RT_ASSIGN_OR_RETURN(json mine, Parse(task_job_json, task + "'s"));
  if (chief == mine) return Status::Ok();

  // json::diff yields an RFC 6902 patch from the chief's job to the task's; its first
  // operation's path is the first field that differs (object keys in sorted order).
  std::string pointer;
  try {
    json patch = json::diff(chief, mine);
    if (!patch.empty()) pointer = patch.at(0).at("path").get<std::string>();
  } catch (const json::exception&) {
    pointer.clear();
  }
  std::string where = pointer.empty() ? std::string("the top level") : pointer;
  return PermissionDeniedError(task + "'s job differs from the chief's at " + where + " (chief: " +
                               ValueAt(chief, pointer) + ", " + task + ": " + ValueAt(mine, pointer) +
                               "); start every task with the same job file");
}

}  // namespace ringtrain::coordination
