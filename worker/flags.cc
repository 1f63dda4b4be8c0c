#include "flags.h"

#include <stdexcept>

namespace ringtrain::cli {

StatusOr<Flags> Flags::Parse(const std::vector<std::string>& args, const std::set<std::string>& known,
                             const std::set<std::string>& booleans) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      f.rest_.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.rfind("--", 0) != 0) return InvalidArgumentError("unexpected argument '" + a + "'; flags look like --name=value");
    std::string name = a.substr(2), value;
    size_t eq = name.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (!known.count(name) && !booleans.count(name)) {
      std::string list;
      for (const auto& k : known) list += " --" + k;
      for (const auto& k : booleans) list += " --" + k;
      return InvalidArgumentError("unknown flag --" + name + "; this command takes:" + list);
    }
    if (booleans.count(name)) {
      if (!has_value) value = "true";
    } else if (!has_value) {
      if (i + 1 >= args.size()) return InvalidArgumentError("flag --" + name + " needs a value");
      value = args[++i];
    }
    f.values_[name] = value;
  }
  return f;
}

std::string Flags::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

StatusOr<int> Flags::get_int(const std::string& name, int fallback, int min, int max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  try {
    size_t used = 0;
    int v = std::stoi(it->second, &used);
    if (used != it->second.size() || v < min || v > max) throw std::out_of_range("range");
    return v;
  } catch (const std::exception&) {
    return InvalidArgumentError("--" + name + " must be an integer in " + std::to_string(min) + ".." +
                                std::to_string(max) + ", not '" + it->second + "'");
  }
}

Status BadFlag(const std::string& message) { return InvalidArgumentError(message).About(Subject::kConfig); }

}  // namespace ringtrain::cli
