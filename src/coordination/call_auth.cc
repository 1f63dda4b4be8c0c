#include "coordination/call_auth.h"

#include <cstdlib>

namespace ringtrain::coordination {
namespace {

constexpr size_t kDigestBytes = 32;  // SHA-256

std::string SignedMessage(std::string_view unix_ms, std::string_view task, std::string_view nonce_hex,
                          std::string_view body_hex, std::string_view method) {
  std::string m(unix_ms);
  for (std::string_view part : {task, nonce_hex, body_hex, method}) {
    m += '.';
    m.append(part.data(), part.size());
  }
  return m;
}

// Lower-case hex to bytes; nullopt for odd length or a non-hex digit.
std::optional<std::string> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
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

// Splits off the last '.'-separated field of *rest; nullopt when there is no dot.
std::optional<std::string_view> PopLast(std::string_view* rest) {
  size_t dot = rest->rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view field = rest->substr(dot + 1);
  *rest = rest->substr(0, dot);
  return field;
}

}  // namespace

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string MakeAuthToken(const security::ClusterSecret& secret, std::string_view task, std::string_view method,
                          std::string_view body, int64_t unix_ms, std::string_view nonce_hex) {
  if (!secret.configured()) return std::string();
  std::string nonce(nonce_hex);
  if (nonce.empty()) {
    // RAND_bytes fails only on a broken system RNG; then the call goes out with an
    // all-zero nonce, which the chief accepts at most once, never silently twice.
    auto random = security::RandomBytes(kAuthNonceBytes);
    nonce = security::Hex(random.ok() ? *random : std::string(kAuthNonceBytes, '\0'));
  }
  const std::string ms = std::to_string(unix_ms);
  const std::string digest = security::Hex(security::Sha256(body));
  std::string token = ms;
  for (std::string_view part : {task, std::string_view(nonce), std::string_view(digest)}) {
    token += '.';
    token.append(part.data(), part.size());
  }
  token += '.';
  token += security::Hex(secret.Proof(kAuthProofContext, SignedMessage(ms, task, nonce, digest, method)));
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
  // <unix_ms>.<task>.<nonce>.<body>.<proof>: the task never holds a dot (checked below),
  // so the fields split unambiguously from both ends.
  std::string_view rest = *token;
  std::optional<std::string_view> proof_hex = PopLast(&rest);
  std::optional<std::string_view> body_hex = PopLast(&rest);
  std::optional<std::string_view> nonce_hex = PopLast(&rest);
  size_t first = rest.find('.');
  if (!proof_hex || !body_hex || !nonce_hex || first == std::string_view::npos) {
    r.reason = "malformed cluster secret proof";
    return r;
  }
  std::string_view ms_text = rest.substr(0, first);
  std::string_view task = rest.substr(first + 1);
  std::optional<int64_t> ms = ParseMillis(ms_text);
  std::optional<std::string> proof = FromHex(*proof_hex);
  std::optional<std::string> nonce = FromHex(*nonce_hex);
  std::optional<std::string> body = FromHex(*body_hex);
  bool task_ok = !task.empty() && task.size() <= 64;
  for (char c : task) {
    task_ok = task_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '_' || c == '-');
  }
  if (!ms || !proof || !task_ok || !nonce || nonce->size() != kAuthNonceBytes || !body ||
      body->size() != kDigestBytes) {
    r.reason = "malformed cluster secret proof";
    return r;
  }
  r.task = std::string(task);
  if (!secret.Verify(kAuthProofContext, SignedMessage(ms_text, task, *nonce_hex, *body_hex, method), *proof)) {
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
  r.nonce = std::move(*nonce);
  r.body_sha256 = std::move(*body);
  r.unix_ms = *ms;
  r.ok = true;
  return r;
}

bool BodyMatches(const AuthCheck& check, std::string_view body) {
  if (check.body_sha256.empty()) return check.ok;  // no secret: nothing was signed
  return check.ok && security::ConstantTimeEqual(security::Sha256(body), check.body_sha256);
}

}  // namespace ringtrain::coordination
