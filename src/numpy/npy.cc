#include "numpy/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

namespace ringtrain::numpy {
namespace {

// A header longer than this is refused: NumPy's own limit for reading is 10,000 bytes
// (max_header_size); a shape of 32 dimensions fits easily.
constexpr uint64_t kMaxHeaderBytes = 1 << 16;

Status Malformed(const std::string& name, const std::string& what) {
  return DataLossError(name + ": not a valid .npy array: " + what).About(Subject::kData);
}

class MappedRegion : public Region {
 public:
  MappedRegion(void* p, size_t n) : p_(p), n_(n) {}
  ~MappedRegion() override { munmap(p_, n_); }
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  const uint8_t* data() const override { return static_cast<const uint8_t*>(p_); }
  size_t size() const override { return n_; }

 private:
  void* p_;
  size_t n_;
};

class OwnedRegion : public Region {
 public:
  explicit OwnedRegion(std::string b) : b_(std::move(b)) {}
  const uint8_t* data() const override { return reinterpret_cast<const uint8_t*>(b_.data()); }
  size_t size() const override { return b_.size(); }

 private:
  std::string b_;
};

// The header dict: a Python literal of string keys and values that are strings,
// True/False, or tuples of non-negative integers.
struct Value {
  enum Kind { kString, kBool, kTuple, kOther } kind = kOther;
  std::string s;
  bool b = false;
  std::vector<int64_t> tuple;
};

class DictParser {
 public:
  explicit DictParser(std::string_view t) : t_(t) {}

  // nullopt and error() set on a syntax error.
  std::optional<std::map<std::string, Value>> Parse() {
    std::map<std::string, Value> d;
    Skip();
    if (!Eat('{')) return Fail("expected '{'");
    Skip();
    while (!Eat('}')) {
      std::string key;
      if (!String(&key)) return Fail("expected a quoted key");
      Skip();
      if (!Eat(':')) return Fail("expected ':' after '" + key + "'");
      Skip();
      Value v;
      if (Peek() == '\'' || Peek() == '"') {
        v.kind = Value::kString;
        if (!String(&v.s)) return Fail("unterminated string");
      } else if (Word("True")) {
        v.kind = Value::kBool, v.b = true;
      } else if (Word("False")) {
        v.kind = Value::kBool, v.b = false;
      } else if (Peek() == '(') {
        v.kind = Value::kTuple;
        if (!Tuple(&v.tuple)) return std::nullopt;
      } else if (Peek() == '[') {
        // A structured dtype's descr is a list of fields: refuse it by kind, not syntax.
        v.kind = Value::kOther;
        int depth = 0;
        do {
          if (Peek() == '[') ++depth;
          if (Peek() == ']') --depth;
          ++i_;
        } while (i_ < t_.size() && depth > 0);
      } else {
        return Fail("unexpected value for '" + key + "'");
      }
      d[key] = std::move(v);
      Skip();
      if (Eat(',')) {
        Skip();
      } else if (Peek() != '}') {
        return Fail("expected ',' or '}'");
      }
    }
    Skip();
    if (i_ != t_.size()) return Fail("bytes after the closing '}'");
    return d;
  }
  const std::string& error() const { return error_; }

 private:
  char Peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++i_;
    return true;
  }
  void Skip() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  bool Word(std::string_view w) {
    if (t_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  bool String(std::string* out) {
    const char q = Peek();
    if (q != '\'' && q != '"') return false;
    ++i_;
    while (i_ < t_.size() && t_[i_] != q) {
      if (t_[i_] == '\\') return false;  // NumPy never escapes inside its keys and descrs
      out->push_back(t_[i_++]);
    }
    return Eat(q);
  }
  bool Tuple(std::vector<int64_t>* out) {
    Eat('(');
    Skip();
    while (!Eat(')')) {
      if (Peek() < '0' || Peek() > '9') return Fail("a shape must hold non-negative integers").has_value();
      int64_t v = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        const int digit = Peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return Fail("a dimension is too large").has_value();
        v = v * 10 + digit;
        ++i_;
      }
      if (Peek() == 'L') ++i_;  // Python 2's long literals, in files from old NumPy versions
      out->push_back(v);
      Skip();
      if (Eat(',')) {
        Skip();
      } else if (Peek() != ')') {
        return Fail("expected ',' or ')' in the shape").has_value();
      }
    }
    return true;
  }
  std::optional<std::map<std::string, Value>> Fail(const std::string& what) {
    if (error_.empty()) error_ = what + " at byte " + std::to_string(i_) + " of the header";
    return std::nullopt;
  }

  std::string_view t_;
  size_t i_ = 0;
  std::string error_;
};

// '<f4' -> kFloat32. nullopt and *why for what is not supported.
std::optional<DType> ParseDescr(const std::string& d, std::string* why) {
  if (d.size() < 2) {
    *why = "dtype '" + d + "' is not a numeric dtype";
    return std::nullopt;
  }
  const char order = d[0];
  const std::string code = d.substr(1);
  static const std::map<std::string, DType> kTypes = {
      {"b1", DType::kBool},   {"i1", DType::kInt8},    {"u1", DType::kUint8},   {"i2", DType::kInt16},
      {"u2", DType::kUint16}, {"i4", DType::kInt32},   {"u4", DType::kUint32},  {"i8", DType::kInt64},
      {"u8", DType::kUint64}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64}};
  if (code == "O") {
    *why = "dtype object ('|O') holds pickled Python objects, which are not read; save a numeric array "
           "(e.g. np.asarray(x, dtype=np.float32))";
    return std::nullopt;
  }
  const auto it = kTypes.find(code);
  if (it == kTypes.end() || (order != '<' && order != '>' && order != '|' && order != '=')) {
    *why = "dtype '" + d + "' is not supported; use bool, (u)int8/16/32/64, float32 or float64 " +
           "(e.g. x.astype(np.float32))";
    return std::nullopt;
  }
  if (order == '>' && ItemSize(it->second) > 1) {
    *why = "dtype '" + d + "' is big-endian; save it little-endian: x.astype('<" + code + "')";
    return std::nullopt;
  }
  return it->second;
}

uint64_t ReadLe(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

}  // namespace

size_t ItemSize(DType t) {
  switch (t) {
    case DType::kBool: case DType::kInt8: case DType::kUint8: return 1;
    case DType::kInt16: case DType::kUint16: return 2;
    case DType::kInt32: case DType::kUint32: case DType::kFloat32: return 4;
    case DType::kInt64: case DType::kUint64: case DType::kFloat64: return 8;
  }
  return 1;
}

bool IsInteger(DType t) { return t != DType::kFloat32 && t != DType::kFloat64; }

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kUint8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUint16: return "uint16";
    case DType::kInt32: return "int32";
    case DType::kUint32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUint64: return "uint64";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
  }
  return "?";
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

StatusOr<std::shared_ptr<const Region>> MapFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening '" + path + "'", errno).About(Subject::kData);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoError("reading '" + path + "'", err).About(Subject::kData);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgumentError("'" + path + "' is not a regular file").About(Subject::kData);
  }
  if (st.st_size == 0) {
    close(fd);
    return DataLossError("'" + path + "' is empty").About(Subject::kData);
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  close(fd);  // the mapping stays valid without the descriptor
  if (p == MAP_FAILED) return ErrnoError("memory-mapping '" + path + "'", err).About(Subject::kData);
  return std::shared_ptr<const Region>(std::make_shared<MappedRegion>(p, static_cast<size_t>(st.st_size)));
}

std::shared_ptr<const Region> HeapRegion(std::string bytes) { return std::make_shared<OwnedRegion>(std::move(bytes)); }

StatusOr<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& name) {
  static constexpr char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view(kMagic, 6)) {
    return Malformed(name, "it does not start with the magic \\x93NUMPY (save it with np.save)");
  }
  const auto* u = reinterpret_cast<const uint8_t*>(bytes.data());
  const int major = u[6], minor = u[7];
  if (major < 1 || major > 3 || minor != 0) {
    return Malformed(name, "format version " + std::to_string(major) + "." + std::to_string(minor) +
                               " is not one of 1.0, 2.0, 3.0");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < static_cast<size_t>(8 + len_bytes)) return Malformed(name, "truncated header");
  const uint64_t header_len = ReadLe(u + 8, len_bytes);
  const uint64_t offset = 8 + len_bytes + header_len;
  if (header_len > kMaxHeaderBytes) {
    return Malformed(name, "header of " + std::to_string(header_len) + " bytes (more than " +
                               std::to_string(kMaxHeaderBytes) + ")");
  }
  if (offset > bytes.size()) {
    return Malformed(name, "header of " + std::to_string(header_len) + " bytes but the file has only " +
                               std::to_string(bytes.size()) + " (truncated)");
  }
  DictParser parser(bytes.substr(8 + len_bytes, header_len));
  auto dict = parser.Parse();
  if (!dict) return Malformed(name, parser.error());
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (!dict->count(key)) return Malformed(name, std::string("the header has no '") + key + "'");
  }
  const Value& descr = (*dict)["descr"];
  const Value& fortran = (*dict)["fortran_order"];
  const Value& shape = (*dict)["shape"];
  if (descr.kind != Value::kString) {
    return InvalidArgumentError(name + ": a structured dtype (record fields) is not supported; save each field " +
                                "as its own array")
        .About(Subject::kData);
  }
  if (fortran.kind != Value::kBool) return Malformed(name, "'fortran_order' is not True or False");
  if (shape.kind != Value::kTuple) return Malformed(name, "'shape' is not a tuple");
  NpyHeader h;
  h.descr = descr.s;
  std::string why;
  const std::optional<DType> t = ParseDescr(descr.s, &why);
  if (!t) return InvalidArgumentError(name + ": " + why).About(Subject::kData);
  h.dtype = *t;
  if (fortran.b) {
    return InvalidArgumentError(name + ": the array is stored in Fortran order; save it C-order: "
                                       "np.save(path, np.ascontiguousarray(x))")
        .About(Subject::kData);
  }
  h.shape = shape.tuple;
  h.data_offset = offset;
  const uint64_t available = bytes.size() - offset;
  const uint64_t item = ItemSize(h.dtype);
  uint64_t n = 1;
  bool too_big = false;
  const bool empty = std::find(h.shape.begin(), h.shape.end(), 0) != h.shape.end();
  for (int64_t d : h.shape) {
    if (empty || too_big) break;
    if (n > available / item / static_cast<uint64_t>(d)) too_big = true;
    n *= static_cast<uint64_t>(d);
  }
  if (empty) n = 0;
  if (too_big) {
    return Malformed(name, "shape " + ShapeString(h.shape) + " of " + DTypeName(h.dtype) + " needs more than the " +
                               std::to_string(available) + " data bytes in the file (truncated)");
  }
  h.num_elements = n;
  h.data_bytes = n * item;
  if (h.data_bytes != available) {
    return Malformed(name, "shape " + ShapeString(h.shape) + " of " + DTypeName(h.dtype) + " needs " +
                               std::to_string(h.data_bytes) + " data bytes but the file has " +
                               std::to_string(available) + (h.data_bytes > available ? " (truncated)" : ""));
  }
  return h;
}

StatusOr<NpyArray> NpyArray::FromNpyBytes(std::shared_ptr<const Region> region, uint64_t offset, uint64_t size,
                                          const std::string& name) {
  if (offset > region->size() || size > region->size() - offset) {
    return InternalError(name + ": array bytes outside their region").About(Subject::kData);
  }
  const auto* p = region->data() + offset;
  RT_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(std::string_view(reinterpret_cast<const char*>(p), size), name));
  NpyArray a;
  a.data_ = p + h.data_offset;
  a.dtype_ = h.dtype;
  a.shape_ = std::move(h.shape);
  a.num_elements_ = h.num_elements;
  a.name_ = name;
  a.region_ = std::move(region);
  return a;
}

StatusOr<NpyArray> NpyArray::FromRaw(std::shared_ptr<const Region> region, uint64_t offset, DType dtype,
                                     std::vector<int64_t> shape, const std::string& name) {
  uint64_t n = 1;
  const uint64_t room = offset <= region->size() ? region->size() - offset : 0;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && n > room / ItemSize(dtype) / static_cast<uint64_t>(d))) {
      return InvalidArgumentError(name + ": shape " + ShapeString(shape) + " does not fit its bytes")
          .About(Subject::kData);
    }
    n *= static_cast<uint64_t>(d);
  }
  NpyArray a;
  a.data_ = region->data() + offset;
  a.dtype_ = dtype;
  a.shape_ = std::move(shape);
  a.num_elements_ = n;
  a.name_ = name;
  a.region_ = std::move(region);
  return a;
}

double NpyArray::AsDouble(uint64_t k) const {
  const uint8_t* p = data_ + k * ItemSize(dtype_);
  switch (dtype_) {
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kFloat64: {
      double f;
      std::memcpy(&f, p, 8);
      return f;
    }
    case DType::kUint64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    default:
      return static_cast<double>(AsInt64(k));
  }
}

int64_t NpyArray::AsInt64(uint64_t k) const {
  const uint8_t* p = data_ + k * ItemSize(dtype_);
  switch (dtype_) {
    case DType::kBool: return p[0] != 0;
    case DType::kUint8: return p[0];
    case DType::kInt8: return static_cast<int8_t>(p[0]);
    case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::kUint16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case DType::kUint64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(v);
    }
    case DType::kFloat32: case DType::kFloat64: return 0;  // not an integer type: callers check first
  }
  return 0;
}

StatusOr<NpyArray> OpenNpy(const std::string& path) {
  RT_ASSIGN_OR_RETURN(std::shared_ptr<const Region> region, MapFile(path));
  const uint64_t size = region->size();
  return NpyArray::FromNpyBytes(std::move(region), 0, size, "'" + path + "'");
}

std::string EncodeNpyFloat32(const std::vector<int64_t>& shape, const float* data) {
  std::string dims;
  uint64_t n = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ", ";
    n *= static_cast<uint64_t>(d);
  }
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // (n,) keeps its comma
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const size_t prefix = 10;  // magic (6), version (2), header length (2)
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  const size_t at = out.size();
  out.resize(at + n * sizeof(float));
  for (uint64_t k = 0; k < n; ++k) {  // little-endian, whatever the host
    uint32_t bits;
    std::memcpy(&bits, data + k, sizeof bits);
    for (int b = 0; b < 4; ++b) out[at + 4 * k + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return out;
}

}  // namespace ringtrain::numpy
