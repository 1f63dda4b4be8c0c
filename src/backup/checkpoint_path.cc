// ModelCheckpoint's file names: the subset of Python's str.format that Keras users
// write in a filepath for an epoch ("{epoch}", "{epoch:03d}", "{{" and "}}").
#include <cstdio>

#include "backup/backup.h"

namespace ringtrain::backup {
namespace {

// "{epoch" + optional ":[0][width]d" + "}" -> the number, formatted as Python would.
StatusOr<std::string> FormatField(const std::string& pattern, const std::string& field, int epoch) {
  auto bad = [&] {
    return InvalidArgumentError("model_checkpoint.filepath '" + pattern + "' has the field '{" + field +
                                "}'; only {epoch} and {epoch:0Nd} (e.g. {epoch:03d}) are supported");
  };
  const std::string name = field.substr(0, field.find(':'));
  if (name != "epoch") return bad();
  if (name.size() == field.size()) return std::to_string(epoch);
  std::string spec = field.substr(name.size() + 1);
  if (spec.empty() || spec.back() != 'd') return bad();
  spec.pop_back();
  const bool zero = !spec.empty() && spec.front() == '0';
  if (zero) spec.erase(0, 1);
  if (spec.size() > 2) return bad();  // widths above 99 are a typo, not a file name
  for (char c : spec) {
    if (c < '0' || c > '9') return bad();
  }
  const int width = spec.empty() ? 0 : std::stoi(spec);
  char buf[128];
  std::snprintf(buf, sizeof(buf), zero ? "%0*d" : "%*d", width, epoch);
  return std::string(buf);
}

}  // namespace

StatusOr<std::string> FormatCheckpointPath(const std::string& pattern, int epoch) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if ((c == '{' || c == '}') && i + 1 < pattern.size() && pattern[i + 1] == c) {  // "{{" and "}}" escape a brace
      out += c;
      ++i;
      continue;
    }
    if (c == '}') {
      return InvalidArgumentError("model_checkpoint.filepath '" + pattern +
                                  "' has an unmatched '}'; write '}}' for a literal brace");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    const size_t close = pattern.find('}', i + 1);
    if (close == std::string::npos) {
      return InvalidArgumentError("model_checkpoint.filepath '" + pattern +
                                  "' has an unclosed '{'; write '{{' for a literal brace");
    }
    RT_ASSIGN_OR_RETURN(std::string text, FormatField(pattern, pattern.substr(i + 1, close - i - 1), epoch));
    out += text;
    i = close;
  }
  return out;
}

}  // namespace ringtrain::backup
