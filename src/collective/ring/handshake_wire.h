// The bytes of the ring handshake (handshake.h describes the exchange). Internal to
// collective/ring/: pure functions, no I/O, callable from any thread.
//
// A hello is 16 bytes: a 4-byte magic, then protocol version, sender's rank and ring
// size as little-endian u32. The magic says whether the sender runs with a cluster
// secret ("RTRA", authenticated) or without one ("RTRG", the original format), so a
// mismatch is reported as such instead of as a stranger.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ringtrain::collective::internal {

inline constexpr size_t kHelloBytes = 16;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kProofBytes = 32;  // HMAC-SHA256
// The purpose every data-plane proof is bound to (ClusterSecret::Proof's context).
inline constexpr char kDataPlaneContext[] = "data-plane";

enum class HelloKind { kPlain, kSecured };

void EncodeHello(HelloKind kind, uint32_t version, int rank, int size, uint8_t* out);

// Empty if `bytes` (kHelloBytes) is a hello of `expected` kind from expected_rank of a
// ring of `size` speaking `version`, else why it is not, phrased for an operator.
std::string CheckHello(const uint8_t* bytes, HelloKind expected, uint32_t version, int size, int expected_rank);

// Whether `bytes` start with either hello magic (else the sender speaks something else).
bool HasHelloMagic(const uint8_t* bytes);

// What a proof covers: the role ("connect" for the connector's proof, "accept" for
// the acceptor's), both nonces, and who talks to whom in which ring, so a proof cannot
// be replayed on another connection, in the other direction, or for another rank pair.
std::string ProofMessage(std::string_view role, std::string_view nonce_a, std::string_view nonce_c,
                         int connector_rank, int acceptor_rank, int size);

}  // namespace ringtrain::collective::internal
