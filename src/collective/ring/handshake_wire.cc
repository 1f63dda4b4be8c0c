#include "collective/ring/handshake_wire.h"

#include <cstring>

namespace ringtrain::collective::internal {
namespace {

constexpr char kPlainMagic[4] = {'R', 'T', 'R', 'G'};
constexpr char kSecuredMagic[4] = {'R', 'T', 'R', 'A'};

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));  // little-endian on the wire
}
uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
void AppendU32(std::string* s, uint32_t v) {
  uint8_t b[4];
  PutU32(b, v);
  s->append(reinterpret_cast<const char*>(b), 4);
}

}  // namespace

void EncodeHello(HelloKind kind, uint32_t version, int rank, int size, uint8_t* out) {
  std::memcpy(out, kind == HelloKind::kSecured ? kSecuredMagic : kPlainMagic, 4);
  PutU32(out + 4, version);
  PutU32(out + 8, static_cast<uint32_t>(rank));
  PutU32(out + 12, static_cast<uint32_t>(size));
}

bool HasHelloMagic(const uint8_t* bytes) {
  return std::memcmp(bytes, kPlainMagic, 4) == 0 || std::memcmp(bytes, kSecuredMagic, 4) == 0;
}

std::string CheckHello(const uint8_t* bytes, HelloKind expected, uint32_t version, int size, int expected_rank) {
  const bool plain = std::memcmp(bytes, kPlainMagic, 4) == 0;
  const bool secured = std::memcmp(bytes, kSecuredMagic, 4) == 0;
  if (!plain && !secured) return "it is not a ringtrain peer (bad magic)";
  if (expected == HelloKind::kSecured && plain) {
    return "wrong or missing cluster secret (it connected without one; every worker needs the same "
           "RINGTRAIN_CLUSTER_SECRET)";
  }
  if (expected == HelloKind::kPlain && secured) {
    return "it uses a cluster secret and this worker has none (set the same RINGTRAIN_CLUSTER_SECRET on every "
           "worker)";
  }
  const uint32_t got_version = GetU32(bytes + 4), got_rank = GetU32(bytes + 8), got_size = GetU32(bytes + 12);
  if (got_version != version) {
    return "it speaks ring protocol version " + std::to_string(got_version) + ", this build speaks " +
           std::to_string(version) + " (are all workers running the same ringtrain build?)";
  }
  if (got_size != static_cast<uint32_t>(size)) {
    return "it belongs to a ring of " + std::to_string(got_size) + " ranks, this ring has " + std::to_string(size) +
           " (do all workers use the same cluster configuration?)";
  }
  if (got_rank != static_cast<uint32_t>(expected_rank)) {
    return "it says it is rank " + std::to_string(got_rank) + ", expected rank " + std::to_string(expected_rank);
  }
  return "";
}

std::string ProofMessage(std::string_view role, std::string_view nonce_a, std::string_view nonce_c,
                         int connector_rank, int acceptor_rank, int size) {
  std::string m(role);
  m.append(nonce_a.data(), nonce_a.size());
  m.append(nonce_c.data(), nonce_c.size());
  AppendU32(&m, static_cast<uint32_t>(connector_rank));
  AppendU32(&m, static_cast<uint32_t>(acceptor_rank));
  AppendU32(&m, static_cast<uint32_t>(size));
  return m;
}

}  // namespace ringtrain::collective::internal
