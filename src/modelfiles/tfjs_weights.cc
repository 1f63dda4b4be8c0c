#include "modelfiles/tfjs_weights.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/file.h"
#include "modelfiles/weight_names.h"

namespace ringtrain::modelfiles {
namespace {

using nlohmann::json;

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

Status Bad(const std::string& path, const std::string& what) {
  return DataLossError("tfjs model '" + path + "': " + what).About(Subject::kStorage);
}

// How a weight is stored: bytes per value and how a value is decoded.
struct Encoding {
  enum Kind { kFloat32, kInt32, kBool, kUint8, kUint16, kFloat16 } kind = kFloat32;
  int bytes = 4;
  double scale = 1, min = 0;
  bool round = false;  // a quantized int32 weight: Math.round(q * scale + min)
};

StatusOr<Encoding> EncodingOf(const json& w, const std::string& name, const std::string& path) {
  const std::string dtype = w.value("dtype", std::string("float32"));
  Encoding e;
  if (dtype != "float32" && dtype != "int32" && dtype != "bool") {
    return UnimplementedError("tfjs model '" + path + "': weight '" + name + "' has dtype '" + dtype +
                              "'; ringtrain reads float32, int32 and bool weights: export the model's weights "
                              "as float32")
        .About(Subject::kStorage);
  }
  if (!w.contains("quantization")) {
    e.kind = dtype == "float32" ? Encoding::kFloat32 : dtype == "int32" ? Encoding::kInt32 : Encoding::kBool;
    e.bytes = dtype == "bool" ? 1 : 4;
    return e;
  }
  const json& q = w["quantization"];
  const std::string qtype = q.is_object() ? q.value("dtype", std::string()) : std::string();
  if (qtype == "uint8" || qtype == "uint16") {
    if (!q.contains("scale") || !q.contains("min") || !q["scale"].is_number() || !q["min"].is_number()) {
      return Bad(path, "weight '" + name + "' is quantized to " + qtype +
                           " without a numeric \"scale\" and \"min\"; convert the model again");
    }
    if (dtype == "bool") {
      return Bad(path, "weight '" + name + "' is a quantized bool, which tfjs does not define; convert the model "
                                           "again");
    }
    e.kind = qtype == "uint8" ? Encoding::kUint8 : Encoding::kUint16;
    e.bytes = qtype == "uint8" ? 1 : 2;
    e.scale = q["scale"].get<double>();
    e.min = q["min"].get<double>();
    e.round = dtype == "int32";
    return e;
  }
  if (qtype == "float16") {
    if (dtype != "float32") {
      return Bad(path, "weight '" + name + "' is quantized to float16 but is " + dtype +
                           " (tfjs quantizes only float32 weights to float16); convert the model again");
    }
    e.kind = Encoding::kFloat16;
    e.bytes = 2;
    return e;
  }
  return UnimplementedError("tfjs model '" + path + "': weight '" + name + "' has the quantization dtype '" + qtype +
                            "'; tfjs defines uint8, uint16 and float16: convert the model again with one of them")
      .About(Subject::kStorage);
}

uint32_t LoadLe(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

float Decode(const Encoding& e, const unsigned char* p) {
  switch (e.kind) {
    case Encoding::kFloat32: {
      const uint32_t bits = LoadLe(p, 4);
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case Encoding::kInt32: return static_cast<float>(static_cast<int32_t>(LoadLe(p, 4)));
    case Encoding::kBool: return p[0] != 0 ? 1.0f : 0.0f;
    case Encoding::kFloat16: return HalfToFloat(static_cast<uint16_t>(LoadLe(p, 2)));
    case Encoding::kUint8:
    case Encoding::kUint16: {
      // JavaScript's arithmetic: doubles, rounded to float32 when stored.
      const double v = static_cast<double>(LoadLe(p, e.bytes)) * e.scale + e.min;
      if (e.round) return static_cast<float>(static_cast<int32_t>(std::floor(v + 0.5)));  // Math.round
      return static_cast<float>(v);
    }
  }
  return 0;
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // infinity, NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {
    // A subnormal half is a normal float: shift the mantissa up to its leading one.
    int e = 113;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

StatusOr<ModelFile> ReadTfjsModel(const std::string& path, const std::string& json_text,
                                  const std::set<std::string>* model_names, uint64_t max_bytes) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Bad(path, "is not valid JSON; give the model.json tfjs wrote");
  if (!doc.contains("weightsManifest") || !doc["weightsManifest"].is_array()) {
    return Bad(path, "has no \"weightsManifest\" list, so it is not a tfjs model.json; give the model.json that "
                     "tf.LayersModel.save or tensorflowjs_converter wrote");
  }
  ModelFile out;
  if (doc.contains("modelTopology") && !doc["modelTopology"].is_null()) out.config_json = doc["modelTopology"].dump();
  std::vector<NamedTensor> named;
  uint64_t budget = max_bytes;  // bytes all the shards may hold together
  const std::string dir = DirOf(path);
  int group_index = 0;
  for (const json& group : doc["weightsManifest"]) {
    ++group_index;
    const std::string where = "weightsManifest group " + std::to_string(group_index);
    if (!group.is_object() || !group.contains("paths") || !group["paths"].is_array() || !group.contains("weights") ||
        !group["weights"].is_array()) {
      return Bad(path, where + " lacks a \"paths\" or \"weights\" list; give the model.json tfjs wrote");
    }
    // What the manifest needs, before any shard is read.
    struct Spec {
      std::string name;
      std::vector<int64_t> shape;
      uint64_t count = 1;
      Encoding encoding;
    };
    std::vector<Spec> specs;
    uint64_t needed = 0;
    for (const json& w : group["weights"]) {
      if (!w.is_object() || !w.contains("name") || !w["name"].is_string() || !w.contains("shape") ||
          !w["shape"].is_array()) {
        return Bad(path, where + " has a weight without a \"name\" and a \"shape\"; give the model.json tfjs wrote");
      }
      Spec s;
      s.name = w["name"].get<std::string>();
      for (const json& d : w["shape"]) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0) {
          return Bad(path, "weight '" + s.name + "' has the shape " + w["shape"].dump() + "; convert the model again");
        }
        s.shape.push_back(d.get<int64_t>());
        const uint64_t dim = d.get<uint64_t>();
        if (dim != 0 && s.count > max_bytes / dim) {
          return Bad(path, "weight '" + s.name + "' has the shape " + w["shape"].dump() +
                               ", larger than any model ringtrain could load");
        }
        s.count *= dim;
      }
      RT_ASSIGN_OR_RETURN(s.encoding, EncodingOf(w, s.name, path));
      const uint64_t bytes = s.count * static_cast<uint64_t>(s.encoding.bytes);
      if (bytes > budget - needed) {
        return Bad(path, "the weights of its manifest need more than the " + FormatBytes(max_bytes) +
                             " this model can need; give the model.json of this model");
      }
      needed += bytes;
      specs.push_back(std::move(s));
    }
    // The group's shards, in order.
    std::string data;
    std::string last_shard;
    for (const json& p : group["paths"]) {
      if (!p.is_string() || p.get<std::string>().empty() || p.get<std::string>()[0] == '/') {
        return Bad(path, where + " lists the shard " + p.dump() +
                             "; shards are named relative to model.json: give the model.json tfjs wrote");
      }
      last_shard = dir + p.get<std::string>();
      uint64_t size = 0;
      auto head = ReadFilePrefix(last_shard, 0, &size);
      if (!head.ok()) {
        if (head.status().code() == Code::kNotFound) {
          return NotFoundError("tfjs model '" + path + "': its weights shard '" + last_shard +
                               "' does not exist; copy every .bin file the manifest lists next to model.json")
              .About(Subject::kStorage);
        }
        return head.status().WithContext("tfjs model '" + path + "'").About(Subject::kStorage);
      }
      if (size > needed - data.size()) {
        // Bytes that belong to no weight: the shards and the manifest are not one model's.
        return Bad(path, where + "'s shards hold more bytes than its weights need (at '" + last_shard +
                             "'); the shards and model.json come from different models: copy them together");
      }
      auto bytes = ReadFile(last_shard, needed - data.size(), "a tfjs weights shard");
      if (!bytes.ok()) return bytes.status().WithContext("tfjs model '" + path + "'").About(Subject::kStorage);
      data += *bytes;
    }
    if (data.size() < needed) {
      return Bad(path, where + "'s shards hold " + std::to_string(data.size()) + " bytes but its weights need " +
                           std::to_string(needed) + "; the shard '" + last_shard +
                           "' is cut short: copy the complete .bin files again");
    }
    budget -= needed;
    size_t offset = 0;
    for (Spec& s : specs) {
      NamedTensor t;
      t.names.push_back(s.name);
      t.tensor.shape = s.shape;
      t.tensor.data.resize(static_cast<size_t>(s.count));
      const unsigned char* p = reinterpret_cast<const unsigned char*>(data.data()) + offset;
      for (uint64_t i = 0; i < s.count; ++i) t.tensor.data[i] = Decode(s.encoding, p + i * s.encoding.bytes);
      offset += static_cast<size_t>(s.count) * s.encoding.bytes;
      named.push_back(std::move(t));
    }
  }
  RT_ASSIGN_OR_RETURN(out.tensors, NameForModel(std::move(named), model_names, "tfjs model '" + path + "'"));
  return out;
}

}  // namespace ringtrain::modelfiles
