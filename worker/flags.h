// A small command-line flag parser: --name=value, --name value, and --bool_flag.
// Unknown flags are errors, so a typo never silently runs with a default.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace ringtrain::cli {

class Flags {
 public:
  // `known` lists the flags the command accepts (without dashes); `booleans` the ones
  // that take no value.
  static StatusOr<Flags> Parse(const std::vector<std::string>& args, const std::set<std::string>& known,
                               const std::set<std::string>& booleans = {});
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  StatusOr<int> get_int(const std::string& name, int fallback, int min, int max) const;
  // Arguments after a literal "--" (passed through by `launch`).
  const std::vector<std::string>& rest() const { return rest_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> rest_;
};

// A bad flag or argument: INVALID_ARGUMENT about the configuration (exit 2).
Status BadFlag(const std::string& message);

}  // namespace ringtrain::cli
