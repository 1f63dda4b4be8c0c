#include "coordination/call_auth.h"

#include <cstdlib>

namespace ringtrain::coordination {
namespace {

std::string SignedMessage(std::string_view unix_ms, std::string_view task, std::string_view method) {
  std::string m(unix_ms);
  m += '.';
  m.append(task.data(), task.size());
  m += '.';
  m.append(method.data(), method.size());
  return m;
}

// Lower-case hex to bytes; nullopt for odd length or a non-hex digit.
std::optional<std::string> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]);
    int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

std::optional<int64_t> ParseMillis(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string MakeAuthToken(const security::ClusterSecret& secret, std::string_view task, std::string_view method,
                          int64_t unix_ms) {
  if (!secret.configured()) return std::string();
  std::string ms = std::to_string(unix_ms);
  std::string token = ms;
  token += '.';
  token.append(task.data(), task.size());
  token += '.';
  token += security::Hex(secret.Proof(kAuthProofContext, SignedMessage(ms, task, method)));
  return token;
}

AuthCheck CheckAuthToken(const security::ClusterSecret& secret, const std::optional<std::string_view>& token,
                         std::string_view method, int64_t now_ms) {
  AuthCheck r;
  if (!secret.configured()) {
    r.ok = true;
    return r;
  }
  if (!token.has_value() || token->empty()) {
    r.reason = "missing cluster secret proof";
    return r;
  }
  // The task may itself hold dots in principle; the timestamp and the hex proof never do.
  size_t first = token->find('.');
  size_t last = token->rfind('.');
  if (first == std::string_view::npos || last == first) {
    r.reason = "malformed cluster secret proof";
    return r;
  }
  std::string_view ms_text = token->substr(0, first);
  std::string_view task = token->substr(first + 1, last - first - 1);
  std::optional<int64_t> ms = ParseMillis(ms_text);
  std::optional<std::string> proof = FromHex(token->substr(last + 1));
  bool task_ok = !task.empty() && task.size() <= 64;
  for (char c : task) {
    task_ok = task_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '_' || c == '-');
  }
  if (!ms || !proof || !task_ok) {
    r.reason = "malformed cluster secret proof";
    return r;
  }
  r.task = std::string(task);
  if (!secret.Verify(kAuthProofContext, SignedMessage(ms_text, task, method), *proof)) {
    r.reason = "wrong cluster secret";
    return r;
  }
  // Checked after the proof, so that only a holder of the secret learns about clocks.
  int64_t skew = *ms - now_ms;
  if (std::llabs(skew) > kMaxClockSkew.count()) {
    // Stable text (no number of seconds): it is also what the refusal is logged once under.
    r.reason = std::string("clock more than ") + std::to_string(kMaxClockSkew.count() / 60000) + " minutes " +
               (skew > 0 ? "ahead of" : "behind") + " the chief's (synchronise the clocks, e.g. with NTP)";
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace ringtrain::coordination
