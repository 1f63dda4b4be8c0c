#include "tfrecord/example_scan.h"

namespace ringtrain::tfrecord {
namespace {

using Kind = ScannedFeature::Kind;

// A cursor over protobuf wire format. Every read checks the bounds; any doubt returns
// false (the caller then lets protobuf decide).
struct Wire {
  const uint8_t* p;
  const uint8_t* end;

  bool done() const { return p == end; }

  // A varint of at most max_bytes bytes: protobuf reads tags and lengths in at most 5
  // and refuses a longer (non-canonical) encoding, so the scan must refuse it too.
  bool Varint(uint64_t* v, int max_bytes = 10) {
    uint64_t r = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (p == end) return false;
      const uint8_t b = *p++;
      if (i == 9 && b > 1) return false;  // past 64 bits
      r |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  bool Tag(uint32_t* field, uint32_t* wire) {
    uint64_t t;
    if (!Varint(&t, 5) || t > 0xffffffffu || (t >> 3) == 0) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *wire = static_cast<uint32_t>(t & 7);
    return true;
  }
  bool Len(Wire* sub) {
    uint64_t n;
    if (!Varint(&n, 5) || n > static_cast<uint64_t>(end - p) || n > 0x7fffffffu) return false;
    *sub = Wire{p, p + n};
    p += n;
    return true;
  }
  // Skips a field of an unknown number; groups (3, 4) and invalid types are refused.
  bool Skip(uint32_t wire) {
    uint64_t v;
    Wire sub;
    switch (wire) {
      case 0: return Varint(&v);
      case 1: return Advance(8);
      case 2: return Len(&sub);
      case 5: return Advance(4);
      default: return false;
    }
  }
  bool Advance(size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    p += n;
    return true;
  }
  std::string_view View() const { return {reinterpret_cast<const char*>(p), static_cast<size_t>(end - p)}; }
};

bool ScanBytesList(Wire w, ScannedFeature* f) {
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.Tag(&field, &wire)) return false;
    if (field == 1) {
      Wire v;
      if (wire != 2 || !w.Len(&v)) return false;
      if (f->count++ == 0) f->bytes = v.View();
    } else if (!w.Skip(wire)) {
      return false;
    }
  }
  return true;
}

bool ScanFloatList(Wire w, ScannedFeature* f) {
  int runs = 0;
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.Tag(&field, &wire)) return false;
    if (field == 1 && wire == 2) {
      Wire v;
      if (!w.Len(&v) || (v.end - v.p) % 4 != 0) return false;
      if (v.end > v.p) {
        if (runs++ == 0 && f->count == 0) f->floats = reinterpret_cast<const char*>(v.p);
        else f->floats = nullptr;
        f->count += (v.end - v.p) / 4;
      }
    } else if (field == 1 && wire == 5) {
      if (!w.Advance(4)) return false;
      f->floats = nullptr;
      ++f->count;
    } else if (field == 1 || !w.Skip(wire)) {
      return false;
    }
  }
  return true;
}

bool ScanInt64List(Wire w, ScannedFeature* f) {
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.Tag(&field, &wire)) return false;
    uint64_t v;
    if (field == 1 && wire == 2) {
      Wire packed;
      if (!w.Len(&packed)) return false;
      while (!packed.done()) {
        if (!packed.Varint(&v)) return false;
        if (f->count++ == 0) f->first_int = static_cast<int64_t>(v);
      }
    } else if (field == 1 && wire == 0) {
      if (!w.Varint(&v)) return false;
      if (f->count++ == 0) f->first_int = static_cast<int64_t>(v);
    } else if (field == 1 || !w.Skip(wire)) {
      return false;
    }
  }
  return true;
}

bool ScanFeature(Wire w, ScannedFeature* f) {
  *f = ScannedFeature{};
  f->kind = Kind::kEmpty;
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.Tag(&field, &wire)) return false;
    if (field >= 1 && field <= 3) {
      Wire list;
      // A second list would be merged (same kind) or replace the first (oneof): rare.
      if (wire != 2 || f->kind != Kind::kEmpty || !w.Len(&list)) return false;
      if (field == 1) {
        f->kind = Kind::kBytes;
        if (!ScanBytesList(list, f)) return false;
      } else if (field == 2) {
        f->kind = Kind::kFloat;
        if (!ScanFloatList(list, f)) return false;
      } else {
        f->kind = Kind::kInt64;
        if (!ScanInt64List(list, f)) return false;
      }
    } else if (!w.Skip(wire)) {
      return false;
    }
  }
  return true;
}

bool ScanEntry(Wire w, const std::string* keys, size_t n, ScannedFeature* out) {
  bool have_key = false, have_value = false;
  std::string_view key;
  ScannedFeature value;
  value.kind = Kind::kEmpty;
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.Tag(&field, &wire)) return false;
    Wire sub;
    if (field == 1) {
      if (wire != 2 || have_key || !w.Len(&sub)) return false;
      have_key = true;
      key = sub.View();
      for (char c : key) {
        if (static_cast<uint8_t>(c) >= 0x80) return false;  // proto3 checks UTF-8; leave that to protobuf
      }
    } else if (field == 2) {
      if (wire != 2 || have_value || !w.Len(&sub) || !ScanFeature(sub, &value)) return false;
      have_value = true;
    } else if (!w.Skip(wire)) {
      return false;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    if (key == keys[k]) out[k] = value;  // a repeated key: the last entry wins, as protobuf's map
  }
  return true;
}

}  // namespace

bool ScanExample(std::string_view bytes, const std::string* keys, size_t n, ScannedFeature* out) {
  for (size_t k = 0; k < n; ++k) out[k] = ScannedFeature{};
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  Wire w{b, b + bytes.size()};
  bool have_features = false;
  while (!w.done()) {
    uint32_t field, wire;
    if (!w.Tag(&field, &wire)) return false;
    if (field == 1) {
      Wire features;
      if (wire != 2 || have_features || !w.Len(&features)) return false;  // a second one would be merged
      have_features = true;
      while (!features.done()) {
        uint32_t f2, w2;
        if (!features.Tag(&f2, &w2)) return false;
        if (f2 == 1) {
          Wire entry;
          if (w2 != 2 || !features.Len(&entry) || !ScanEntry(entry, keys, n, out)) return false;
        } else if (!features.Skip(w2)) {
          return false;
        }
      }
    } else if (!w.Skip(wire)) {
      return false;
    }
  }
  return true;
}

}  // namespace ringtrain::tfrecord
