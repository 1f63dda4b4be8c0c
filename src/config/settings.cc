#include "config/settings.h"

#include <cstdlib>
#include <sstream>

namespace ringtrain::config {
namespace {

Status ReadDouble(const char* name, double min, double* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return Status::Ok();
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || d < min) {
    return InvalidArgumentError(std::string(name) + "='" + v + "' is not a number >= " + std::to_string(min));
  }
  *out = d;
  return Status::Ok();
}

Status ReadInt(const char* name, int min, int* out) {
  double d = *out;
  RT_RETURN_IF_ERROR(ReadDouble(name, min, &d));
  if (d != static_cast<int>(d)) return InvalidArgumentError(std::string(name) + " must be an integer");
  *out = static_cast<int>(d);
  return Status::Ok();
}

Status ReadBool(const char* name, bool* out) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return Status::Ok();
  std::string t(v);
  if (t == "1" || t == "true") {
    *out = true;
  } else if (t == "0" || t == "false") {
    *out = false;
  } else {
    return InvalidArgumentError(std::string(name) + "='" + t + "' must be 1 or 0");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Settings> LoadSettings() {
  Settings s;
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_RENDEZVOUS_TIMEOUT_S", 0.1, &s.rendezvous_timeout_s));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_HEARTBEAT_INTERVAL_MS", 10, &s.heartbeat_interval_ms));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_HEARTBEAT_TIMEOUT_MS", 50, &s.heartbeat_timeout_ms));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_COLLECTIVE_TIMEOUT_S", 0.1, &s.collective_timeout_s));
  RT_RETURN_IF_ERROR(ReadDouble("RINGTRAIN_SHUTDOWN_TIMEOUT_S", 0.1, &s.shutdown_timeout_s));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_NUM_THREADS", 0, &s.num_threads));
  RT_RETURN_IF_ERROR(ReadInt("RINGTRAIN_CHUNK_BYTES", 4096, &s.chunk_bytes));
  RT_RETURN_IF_ERROR(ReadBool("RINGTRAIN_ALLOW_INSECURE", &s.allow_insecure));
  RT_RETURN_IF_ERROR(ReadBool("RINGTRAIN_BIND_ALL", &s.bind_all));
  RT_RETURN_IF_ERROR(ReadBool("RINGTRAIN_CHECK_PEER_ADDRESS", &s.check_peer_address));
  if (const char* v = std::getenv("RINGTRAIN_DATA_HOST")) s.data_host = v;
  if (const char* v = std::getenv("RINGTRAIN_PROGRESS")) {
    s.progress = v;
    if (s.progress != "auto" && s.progress != "bar" && s.progress != "lines") {
      return InvalidArgumentError("RINGTRAIN_PROGRESS must be auto, bar or lines, not '" + s.progress + "'");
    }
  }
  if (const char* v = std::getenv("RINGTRAIN_TRANSPORT")) {
    s.transport = v;
    if (s.transport != "auto" && s.transport != "tcp") {
      return InvalidArgumentError("RINGTRAIN_TRANSPORT must be auto or tcp, not '" + s.transport + "'");
    }
  }
  if (s.heartbeat_timeout_ms <= s.heartbeat_interval_ms) {
    return InvalidArgumentError("RINGTRAIN_HEARTBEAT_TIMEOUT_MS must be larger than RINGTRAIN_HEARTBEAT_INTERVAL_MS");
  }
  return s;
}

std::string Describe(const Settings& s) {
  Settings d;
  std::ostringstream o;
  o << "settings: RINGTRAIN_RENDEZVOUS_TIMEOUT_S=" << s.rendezvous_timeout_s << " (default " << d.rendezvous_timeout_s
    << "), RINGTRAIN_HEARTBEAT_INTERVAL_MS=" << s.heartbeat_interval_ms << " (default " << d.heartbeat_interval_ms
    << "), RINGTRAIN_HEARTBEAT_TIMEOUT_MS=" << s.heartbeat_timeout_ms << " (default " << d.heartbeat_timeout_ms
    << "), RINGTRAIN_COLLECTIVE_TIMEOUT_S=" << s.collective_timeout_s << " (default " << d.collective_timeout_s
    << "), RINGTRAIN_SHUTDOWN_TIMEOUT_S=" << s.shutdown_timeout_s << " (default " << d.shutdown_timeout_s
    << "), RINGTRAIN_NUM_THREADS=" << s.num_threads << " (default 0 = auto), RINGTRAIN_DATA_HOST='" << s.data_host
    << "' (default: the task's own host), RINGTRAIN_TRANSPORT=" << s.transport
    << " (default auto), RINGTRAIN_CHUNK_BYTES=" << s.chunk_bytes << " (default " << d.chunk_bytes << "), RINGTRAIN_PROGRESS=" << s.progress << " (default auto)"
    << ", RINGTRAIN_ALLOW_INSECURE=" << s.allow_insecure << " (default 0), RINGTRAIN_BIND_ALL=" << s.bind_all
    << " (default 0), RINGTRAIN_CHECK_PEER_ADDRESS=" << s.check_peer_address << " (default 1)";
  return o.str();
}

}  // namespace ringtrain::config
