// CRC-32C (Castagnoli), the checksum TFRecord files use, and TensorFlow's masking of it.
// Pure functions; safe to call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringtrain::summary {

// CRC-32C of n bytes (reflected polynomial 0x82F63B78, initial and final XOR 0xFFFFFFFF,
// as in RFC 3720). Crc32c("123456789", 9) == 0xE3069283.
uint32_t Crc32c(const void* data, size_t n);

// Extends `crc` (a finished Crc32c of earlier bytes) with n more bytes, so that
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

// TFRecord stores CRCs masked, because a CRC computed over data that itself holds CRCs
// is weak: mask(crc) = ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc(uint32_t crc);
uint32_t UnmaskCrc(uint32_t masked);
inline uint32_t MaskedCrc32c(const void* data, size_t n) { return MaskCrc(Crc32c(data, n)); }

}  // namespace ringtrain::summary
