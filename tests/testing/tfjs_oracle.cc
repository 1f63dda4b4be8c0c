// RunTfjs: the request goes to a temporary file, node runs tfjs_oracle.js on it under
// bench::RunProgram's deadline, and the response file is parsed.
#include "testing/tfjs_oracle.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "bench/subprocess.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;

std::string OracleDir() {
  const char* env = getenv("RINGTRAIN_TFJS_ORACLE_DIR");
  if (env != nullptr && *env != '\0') return env;
  return RINGTRAIN_TFJS_ORACLE_DIR;  // the source tree's tests/oracle (CMake)
}

// $RINGTRAIN_NODE, else the first executable `node` on $PATH; empty if none.
std::string FindNode() {
  const char* env = getenv("RINGTRAIN_NODE");
  if (env != nullptr && *env != '\0') return ::access(env, X_OK) == 0 ? env : "";
  const char* path = getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/node";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Tail(const std::string& s, size_t n) { return s.size() <= n ? s : "..." + s.substr(s.size() - n); }

StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Removes the request/response directory however RunTfjs returns.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/ringtrain_tfjs.XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

StatusOr<nlohmann::json> RunOracle(const std::string& node, const nlohmann::json& request, double timeout_s) {
  const std::string script = OracleDir() + "/tfjs_oracle.js";
  ScratchDir dir;
  if (dir.path().empty()) return ErrnoError("mkdtemp for the tfjs oracle", errno);
  const std::string req_path = dir.path() + "/request.json", res_path = dir.path() + "/response.json";
  {
    std::ofstream out(req_path, std::ios::binary);
    out << request.dump();
    if (!out.flush()) return InternalError("cannot write " + req_path);
  }
  RT_ASSIGN_OR_RETURN(bench::ProgramResult run,
                      bench::RunProgram({node, script, req_path, res_path}, timeout_s, 64 << 10));
  if (run.exit_code != 0) {
    return InternalError("tfjs oracle (" + request.value("kind", std::string("?")) + ") exited with " +
                         std::to_string(run.exit_code) + ": " + Tail(run.output, 4000));
  }
  RT_ASSIGN_OR_RETURN(std::string text, ReadAll(res_path));
  nlohmann::json response = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (response.is_discarded() || !response.is_object()) {
    return InternalError("tfjs oracle wrote a response that is not a JSON object: " + Tail(text, 400));
  }
  if (!response.value("ok", false)) {
    return InternalError("tfjs oracle: " + response.value("error", std::string("failed without a message")) +
                         (run.output.empty() ? "" : "; output: " + Tail(run.output, 2000)));
  }
  return response;
}

struct Availability {
  bool ok = false;
  std::string why;
  std::string node;
};

const Availability& CheckOnce() {
  static Availability a;
  static std::once_flag once;
  std::call_once(once, [] {
    a.node = FindNode();
    const std::string dir = OracleDir();
    if (a.node.empty()) {
      a.why = "no `node` on PATH (set RINGTRAIN_NODE); the tfjs fidelity tests need Node.js >= 18";
      return;
    }
    if (!fs::exists(dir + "/node_modules/@tensorflow/tfjs/package.json")) {
      a.why = dir + "/node_modules has no @tensorflow/tfjs: run tests/oracle/install.sh (needs npm and the npm registry)";
      return;
    }
    auto r = RunOracle(a.node, {{"kind", "version"}}, 60);
    if (!r.ok()) {
      a.why = "the tfjs smoke run failed: " + r.status().ToString();
      return;
    }
    if (r->value("check", nlohmann::json()) != nlohmann::json::array({4})) {
      a.why = "the tfjs smoke run computed 1 + 3 = " + r->value("check", nlohmann::json()).dump();
      return;
    }
    a.ok = true;
  });
  return a;
}

}  // namespace

bool TfjsAvailable(std::string* why) {
  const Availability& a = CheckOnce();
  if (!a.ok && why != nullptr) *why = a.why;
  return a.ok;
}

StatusOr<nlohmann::json> RunTfjs(const nlohmann::json& request, double timeout_s) {
  const Availability& a = CheckOnce();
  if (!a.ok) return UnavailableError("TensorFlow.js oracle unavailable: " + a.why);
  return RunOracle(a.node, request, timeout_s);
}

nlohmann::json TfjsTensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  // Floats widen to doubles exactly; nlohmann writes doubles with a round-trip precision.
  return {{"shape", shape}, {"values", values}};
}

std::vector<float> TfjsValues(const nlohmann::json& tensor, const std::vector<int64_t>& shape) {
  if (!tensor.is_object() || !tensor.contains("shape") || !tensor.contains("values")) {
    ADD_FAILURE() << "not an oracle tensor: " << Tail(tensor.dump(), 200);
    return {};
  }
  if (tensor["shape"] != nlohmann::json(shape)) {
    ADD_FAILURE() << "oracle tensor shape " << tensor["shape"].dump() << ", expected " << nlohmann::json(shape).dump();
    return {};
  }
  std::vector<float> out;
  out.reserve(tensor["values"].size());
  for (const nlohmann::json& v : tensor["values"]) {
    if (!v.is_number()) {
      ADD_FAILURE() << "oracle tensor value " << v.dump() << " is not a finite number";
      return {};
    }
    out.push_back(v.get<float>());
  }
  return out;
}

::testing::AssertionResult AllClose(const std::vector<float>& got, const std::vector<float>& want, double rtol) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << want.size();
  }
  size_t bad = 0, first = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double a = got[i], b = want[i];
    const double ratio = std::abs(a - b) / (rtol * std::max(1.0, std::abs(b)));
    if (!(ratio <= 1.0)) {  // also catches NaN
      if (bad++ == 0) first = i;
      if (!(ratio <= worst_ratio)) {
        worst_ratio = ratio;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " values differ by more than " << rtol
                                       << " * max(1, |want|); first [" << first << "] " << got[first] << " vs "
                                       << want[first] << ", worst [" << worst << "] " << got[worst] << " vs "
                                       << want[worst];
}

}  // namespace ringtrain::testing
