#include "config/slurm_resolver.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

namespace ringtrain::config {
namespace {

// No real allocation comes near this; it keeps a typo like "n[1-999999999]" from
// exhausting memory before the count check can reject it.
constexpr uint64_t kMaxHosts = 1 << 20;
constexpr uint64_t kMaxTasks = 1 << 20;

const char kRunHint[] =
    "run the worker under srun (inside an sbatch or salloc allocation), or use --cluster_resolver tf_config with "
    "TF_CONFIG";

// Slurm writes these variables itself, so a bad value usually means one was set or
// overridden by hand, or the worker was started outside the step it names.
const char kValueHint[] = " (srun sets these for each job step; see docs/deploy/slurm.md)";

Status Bad(const std::string& what, const std::string& text, const std::string& why) {
  return InvalidArgumentError(what + "='" + text + "' " + why + kValueHint);
}

bool IsDigits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// Decimal digits to a number; false when empty, not digits, or past `max`.
bool ParseCount(const std::string& s, uint64_t max, uint64_t* out) {
  if (!IsDigits(s) || s.size() > 18) return false;
  uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
  if (v > max) return false;
  *out = v;
  return true;
}

bool IsHostChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

// Splits on commas that are not inside brackets. Brackets must balance and not nest.
StatusOr<std::vector<std::string>> SplitTopLevel(const std::string& text, const std::string& what) {
  std::vector<std::string> parts;
  std::string cur;
  bool in_bracket = false;
  for (char c : text) {
    if (c == '[') {
      if (in_bracket) return Bad(what, text, "has a '[' inside brackets; Slurm hostlists do not nest");
      in_bracket = true;
    } else if (c == ']') {
      if (!in_bracket) return Bad(what, text, "has a ']' without a matching '['");
      in_bracket = false;
    } else if (c == ',' && !in_bracket) {
      parts.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (in_bracket) return Bad(what, text, "has a '[' without a matching ']'");
  parts.push_back(cur);
  return parts;
}

// "1,3-4" or "01-03" -> the numbers as text, zero-padded to the lower bound's width.
StatusOr<std::vector<std::string>> ExpandBracket(const std::string& body, const std::string& what,
                                                 const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = body.find(',', start);
    std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return Bad(what, text, "has an empty item in brackets '[" + body + "]'");
    size_t dash = item.find('-');
    std::string lo_text = item.substr(0, dash);
    std::string hi_text = dash == std::string::npos ? lo_text : item.substr(dash + 1);
    uint64_t lo = 0, hi = 0;
    if (!ParseCount(lo_text, UINT64_MAX >> 8, &lo) || !ParseCount(hi_text, UINT64_MAX >> 8, &hi)) {
      return Bad(what, text, "has '" + item + "' in brackets; expected a number or a range like 1-4");
    }
    if (hi < lo) return Bad(what, text, "has the reversed range '" + item + "'; write the lower bound first");
    if (hi - lo + 1 + out.size() > kMaxHosts) {
      return Bad(what, text, "expands to more than " + std::to_string(kMaxHosts) + " names");
    }
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < lo_text.size()) s.insert(0, lo_text.size() - s.size(), '0');
      out.push_back(std::move(s));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// One top-level name, e.g. "r[1-2]n[01-02].x": the product of its bracket groups.
StatusOr<std::vector<std::string>> ExpandName(const std::string& name, const std::string& what,
                                              const std::string& text) {
  if (name.empty()) return Bad(what, text, "has an empty host name (a stray comma?)");
  std::vector<std::string> names = {""};
  size_t i = 0;
  while (i < name.size()) {
    if (name[i] == '[') {
      size_t close = name.find(']', i);  // SplitTopLevel checked the balance
      RT_ASSIGN_OR_RETURN(std::vector<std::string> numbers, ExpandBracket(name.substr(i + 1, close - i - 1), what, text));
      if (names.size() * numbers.size() > kMaxHosts) {
        return Bad(what, text, "expands to more than " + std::to_string(kMaxHosts) + " names");
      }
      std::vector<std::string> next;
      next.reserve(names.size() * numbers.size());
      for (const auto& prefix : names) {
        for (const auto& n : numbers) next.push_back(prefix + n);
      }
      names = std::move(next);
      i = close + 1;
    } else {
      if (!IsHostChar(name[i])) {
        return Bad(what, text, std::string("has the character '") + name[i] +
                                   "' in a host name; expected letters, digits, '.', '-', '_'");
      }
      for (auto& n : names) n += name[i];
      ++i;
    }
  }
  return names;
}

// The first of `names` that is set in `env`, or an error naming them all.
StatusOr<std::pair<std::string, std::string>> Lookup(const SlurmEnvironment& env,
                                                     const std::vector<std::string>& names) {
  for (const auto& n : names) {
    auto it = env.find(n);
    if (it != env.end()) return std::make_pair(n, it->second);
  }
  std::string list = names[0];
  for (size_t i = 1; i < names.size(); ++i) list += (i + 1 == names.size() ? " nor " : ", ") + names[i];
  return InvalidArgumentError((names.size() > 1 ? "neither " : "") + list + (names.size() > 1 ? " is" : " is not") +
                              " set; " + kRunHint);
}

}  // namespace

const std::vector<std::string>& SlurmVariableNames() {
  static const std::vector<std::string> kNames = {
      "SLURM_PROCID",        "SLURM_STEP_NUM_TASKS",      "SLURM_NTASKS",         "SLURM_STEP_NODELIST",
      "SLURM_JOB_NODELIST",  "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURMD_NODENAME",
      "SLURM_LOCALID",
  };
  return kNames;
}

SlurmEnvironment SlurmEnvironmentFromProcess() {
  SlurmEnvironment env;
  for (const auto& name : SlurmVariableNames()) {
    if (const char* v = std::getenv(name.c_str())) env[name] = v;
  }
  return env;
}

StatusOr<std::vector<std::string>> ExpandSlurmHostlist(const std::string& text, const std::string& what) {
  if (text.empty()) return Bad(what, text, "is empty; expected a Slurm hostlist like n[1-3],m5");
  RT_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitTopLevel(text, what));
  std::vector<std::string> hosts;
  for (const auto& part : parts) {
    RT_ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandName(part, what, text));
    if (hosts.size() + names.size() > kMaxHosts) {
      return Bad(what, text, "expands to more than " + std::to_string(kMaxHosts) + " names");
    }
    hosts.insert(hosts.end(), names.begin(), names.end());
  }
  return hosts;
}

StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(const std::string& text, const std::string& what) {
  if (text.empty()) return Bad(what, text, "is empty; expected tasks per node like 3(x2),2");
  std::vector<int> counts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string count_text = item;
    std::string repeat_text = "1";
    size_t paren = item.find('(');
    if (paren != std::string::npos) {
      // "N(xM)": N tasks on each of M nodes.
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')') {
        return Bad(what, text, "has '" + item + "'; expected N or N(xM), e.g. 3(x2)");
      }
      count_text = item.substr(0, paren);
      repeat_text = item.substr(paren + 2, item.size() - paren - 3);
    }
    uint64_t count = 0, repeat = 0;
    if (!ParseCount(count_text, kMaxTasks, &count) || !ParseCount(repeat_text, kMaxHosts, &repeat) || count == 0 ||
        repeat == 0) {
      return Bad(what, text, "has '" + item + "'; expected N or N(xM) with N and M at least 1, e.g. 3(x2)");
    }
    if (counts.size() + repeat > kMaxHosts) {
      return Bad(what, text, "describes more than " + std::to_string(kMaxHosts) + " nodes");
    }
    counts.insert(counts.end(), repeat, static_cast<int>(count));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return counts;
}

std::string SlurmCluster::ToTfConfigText() const {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : this->workers) workers.push_back(w.ToString());
  nlohmann::json j;
  j["cluster"]["worker"] = workers;
  j["task"] = {{"type", "worker"}, {"index", task_index}};
  return j.dump();
}

StatusOr<SlurmCluster> ResolveSlurmCluster(const SlurmEnvironment& env, int base_port) {
  if (base_port < 1 || base_port > 65535) {
    return InvalidArgumentError("the Slurm base port " + std::to_string(base_port) + " is outside 1..65535");
  }
  RT_ASSIGN_OR_RETURN(auto procid, Lookup(env, {"SLURM_PROCID"}));
  RT_ASSIGN_OR_RETURN(auto ntasks, Lookup(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"}));
  RT_ASSIGN_OR_RETURN(auto nodelist, Lookup(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}));
  RT_ASSIGN_OR_RETURN(auto per_node, Lookup(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}));

  uint64_t num_tasks = 0, rank = 0;
  if (!ParseCount(ntasks.second, kMaxTasks, &num_tasks) || num_tasks == 0) {
    return Bad(ntasks.first, ntasks.second, "is not a task count (expected a whole number of at least 1)");
  }
  if (!ParseCount(procid.second, kMaxTasks, &rank)) {
    return Bad(procid.first, procid.second, "is not a task rank (expected a whole number)");
  }
  if (rank >= num_tasks) {
    return Bad(procid.first, procid.second,
               "is not below " + ntasks.first + "=" + ntasks.second + "; the task rank must be 0.." +
                   std::to_string(num_tasks - 1));
  }
  RT_ASSIGN_OR_RETURN(std::vector<std::string> hosts, ExpandSlurmHostlist(nodelist.second, nodelist.first));
  RT_ASSIGN_OR_RETURN(std::vector<int> counts, ExpandSlurmTasksPerNode(per_node.second, per_node.first));
  const std::string both = nodelist.first + "='" + nodelist.second + "' and " + per_node.first + "='" +
                           per_node.second + "'";
  if (hosts.size() != counts.size()) {
    return InvalidArgumentError(both + " disagree: " + std::to_string(hosts.size()) + " nodes but " +
                                std::to_string(counts.size()) + " per-node task counts" + kValueHint);
  }
  std::set<std::string> seen;
  for (const auto& h : hosts) {
    if (!seen.insert(h).second) return Bad(nodelist.first, nodelist.second, "names node '" + h + "' twice");
  }
  uint64_t sum = 0;
  int most = 0;
  for (int c : counts) {
    sum += static_cast<uint64_t>(c);
    most = std::max(most, c);
  }
  if (sum != num_tasks) {
    return InvalidArgumentError(both + " place " + std::to_string(sum) + " tasks, but " + ntasks.first + "=" +
                                ntasks.second + kValueHint);
  }
  if (static_cast<int64_t>(base_port) + most - 1 > 65535) {
    return InvalidArgumentError("base port " + std::to_string(base_port) + " with " + std::to_string(most) +
                                " tasks on one node (" + per_node.first + "='" + per_node.second +
                                "') needs ports above 65535; choose a lower --base_port");
  }

  SlurmCluster cluster;
  cluster.task_index = static_cast<int>(rank);
  cluster.num_nodes = static_cast<int>(hosts.size());
  int local_index = 0;  // this task's index on its node
  for (size_t node = 0; node < hosts.size(); ++node) {
    for (int k = 0; k < counts[node]; ++k) {
      if (cluster.workers.size() == rank) local_index = k;
      cluster.workers.push_back(HostPort{hosts[node], base_port + k});
    }
  }

  // The layout above is an assumption about srun (its default block distribution). When
  // srun says where this task really runs, check it: a cyclic or arbitrary layout would
  // otherwise give two tasks the same address, or one task another node's.
  const HostPort& self = cluster.workers[rank];
  auto node_name = env.find("SLURMD_NODENAME");
  auto local_id = env.find("SLURM_LOCALID");
  const bool wrong_node = node_name != env.end() && node_name->second != self.host;
  const bool wrong_slot = local_id != env.end() && local_id->second != std::to_string(local_index);
  if (wrong_node || wrong_slot) {
    std::string actual = wrong_node ? "SLURMD_NODENAME='" + node_name->second + "'"
                                    : "SLURM_LOCALID='" + local_id->second + "'";
    return InvalidArgumentError(actual + ", but the block layout of " + both + " puts SLURM_PROCID=" +
                                procid.second + " on node '" + self.host + "' as its task " +
                                std::to_string(local_index) +
                                "; run srun with its default block distribution (no --distribution=cyclic, "
                                "plane or arbitrary)");
  }
  return cluster;
}

StatusOr<std::string> SlurmTfConfigText(const SlurmEnvironment& env, int base_port) {
  RT_ASSIGN_OR_RETURN(SlurmCluster cluster, ResolveSlurmCluster(env, base_port));
  return cluster.ToTfConfigText();
}

}  // namespace ringtrain::config
