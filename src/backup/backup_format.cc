// A backup's two files in memory: the safetensors weights and the JSON metadata that
// commits them. See backup.h for the layout.
#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "backup/backup.h"
#include "checkpoint/safetensors.h"
#include "common/json.h"

namespace ringtrain::backup {
namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "ringtrain-backup";
constexpr int64_t kVersion = 1;
constexpr int64_t kMaxStep = 1'000'000'000'000;  // file names hold 12 digits
constexpr const char* kRefuseAdvice =
    "delete the backup directory or point backup_and_restore.backup_dir elsewhere";

std::string ParamTensor(const std::string& name) { return "params/" + name; }
std::string SlotTensor(const std::string& name) { return "optimizer/" + name; }
std::string ShapeText(const std::vector<int64_t>& shape) { return json(shape).dump(); }

std::string Crc32Hex(const float* data, size_t count) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  if (count > 0) crc = crc32_z(crc, reinterpret_cast<const Bytef*>(data), count * sizeof(float));
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  return buf;
}

// JSON has no NaN or infinity (nlohmann would write null); a diverged run's loss must
// still survive the round trip, so those three are written as strings.
json DoubleToJson(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// The identity's parameters must tile the flat buffer exactly, or a decoded buffer
// would hold gaps that no tensor restores.
Status CheckLayout(const BackupIdentity& id) {
  std::set<std::string> names;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const ParamSpec& p : id.params) {
    if (p.name.empty() || !names.insert(p.name).second) {
      return InvalidArgumentError("backup identity: parameter name '" + p.name + "' is empty or repeated");
    }
    for (int64_t d : p.shape) {
      if (d < 0) return InvalidArgumentError("backup identity: parameter '" + p.name + "' has a negative dimension");
    }
    ranges.emplace_back(p.offset, p.offset + p.size());
  }
  std::sort(ranges.begin(), ranges.end());
  size_t expect = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != expect) {
      return InvalidArgumentError("backup identity: the parameters do not tile the flat buffer (a parameter starts at " +
                                  std::to_string(begin) + " where " + std::to_string(expect) + " was expected)");
    }
    expect = end;
  }
  if (id.steps_per_epoch <= 0) {
    return InvalidArgumentError("backup identity: steps_per_epoch is " + std::to_string(id.steps_per_epoch) +
                                "; it must be positive");
  }
  return Status::Ok();
}

// --- Reading the metadata: every access checked, failures are DATA_LOSS naming the field.

Status BadField(const std::string& field, const char* what) {
  return DataLossError("backup metadata field '" + field + "' is missing or not " + what);
}

const json* Member(const json& obj, const std::string& key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Status ReadInt(const json& obj, const std::string& key, const std::string& field, int64_t* out) {
  const json* v = Member(obj, key);
  if (!v || !v->is_number_integer()) return BadField(field, "an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return BadField(field, "an integer in range");
  }
  *out = v->get<int64_t>();
  return Status::Ok();
}

Status ReadString(const json& obj, const std::string& key, const std::string& field, std::string* out) {
  const json* v = Member(obj, key);
  if (!v || !v->is_string()) return BadField(field, "a string");
  *out = v->get<std::string>();
  return Status::Ok();
}

Status ReadDouble(const json& obj, const std::string& key, const std::string& field, double* out) {
  const json* v = Member(obj, key);
  if (v && v->is_number()) {
    *out = v->get<double>();
    return Status::Ok();
  }
  if (v && v->is_string()) {
    const std::string s = v->get<std::string>();
    if (s == "nan") *out = std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") *out = std::numeric_limits<double>::infinity();
    if (s == "-inf") *out = -std::numeric_limits<double>::infinity();
    if (s == "nan" || s == "inf" || s == "-inf") return Status::Ok();
  }
  return BadField(field, "a number");
}

// A count: an integer, or (backups written before counts were integers) a float with
// an integral value; never negative.
Status ReadCount(const json& obj, const std::string& key, const std::string& field, int64_t* out) {
  const json* v = Member(obj, key);
  if (v && v->is_number_float()) {
    const double d = v->get<double>();
    // 2^63 is the first double above int64's range.
    if (!(d >= 0 && d < 9223372036854775808.0) || std::floor(d) != d) return BadField(field, "a count");
    *out = static_cast<int64_t>(d);
    return Status::Ok();
  }
  RT_RETURN_IF_ERROR(ReadInt(obj, key, field, out));
  if (*out < 0) return BadField(field, "a count");
  return Status::Ok();
}

struct Metadata {
  std::string job_fingerprint;
  int64_t num_workers = 0, steps_per_epoch = 0, global_step = 0, epoch = 0, step_in_epoch = 0;
  std::string optimizer_name;
  int64_t iterations = 0;
  std::vector<std::string> slots;
  double loss_sum = 0;
  int64_t correct = 0, examples = 0;
  std::vector<double> sums;
  json history;
  std::vector<std::pair<std::string, std::vector<int64_t>>> params;
  std::string weights_file;
  int64_t weights_bytes = 0;
  std::map<std::string, std::string> checksums;
};

Status ParseMetadata(const std::string& text, Metadata* m) {
  auto parsed = ParseJson(text, "backup metadata");
  if (!parsed.ok()) return DataLossError("backup metadata is not a JSON object (" + parsed.status().message() + ")");
  const json doc = std::move(parsed).value();
  if (!doc.is_object()) return DataLossError("backup metadata is not a JSON object");
  std::string format;
  int64_t version = 0;
  RT_RETURN_IF_ERROR(ReadString(doc, "format", "format", &format));
  if (format != kFormat) return DataLossError("backup metadata has format '" + format + "', not '" + kFormat + "'");
  RT_RETURN_IF_ERROR(ReadInt(doc, "version", "version", &version));
  if (version != kVersion) {
    return DataLossError("backup metadata has version " + std::to_string(version) + "; this build reads version " +
                         std::to_string(kVersion));
  }
  RT_RETURN_IF_ERROR(ReadString(doc, "job_fingerprint", "job_fingerprint", &m->job_fingerprint));
  RT_RETURN_IF_ERROR(ReadInt(doc, "num_workers", "num_workers", &m->num_workers));
  RT_RETURN_IF_ERROR(ReadInt(doc, "steps_per_epoch", "steps_per_epoch", &m->steps_per_epoch));
  RT_RETURN_IF_ERROR(ReadInt(doc, "global_step", "global_step", &m->global_step));
  RT_RETURN_IF_ERROR(ReadInt(doc, "epoch", "epoch", &m->epoch));
  RT_RETURN_IF_ERROR(ReadInt(doc, "step_in_epoch", "step_in_epoch", &m->step_in_epoch));
  int64_t epoch_steps = 0, step = 0;  // checked arithmetic: the fields may be anything
  if (m->global_step < 0 || m->global_step >= kMaxStep || m->steps_per_epoch <= 0 || m->epoch < 0 ||
      m->step_in_epoch < 0 || m->step_in_epoch >= m->steps_per_epoch ||
      __builtin_mul_overflow(m->epoch, m->steps_per_epoch, &epoch_steps) ||
      __builtin_add_overflow(epoch_steps, m->step_in_epoch, &step) || step != m->global_step) {
    return DataLossError("backup metadata's global_step " + std::to_string(m->global_step) + ", epoch " +
                         std::to_string(m->epoch) + " and step_in_epoch " + std::to_string(m->step_in_epoch) +
                         " do not agree with steps_per_epoch " + std::to_string(m->steps_per_epoch));
  }

  const json* opt = Member(doc, "optimizer");
  if (!opt || !opt->is_object()) return BadField("optimizer", "an object");
  RT_RETURN_IF_ERROR(ReadString(*opt, "name", "optimizer.name", &m->optimizer_name));
  RT_RETURN_IF_ERROR(ReadInt(*opt, "iterations", "optimizer.iterations", &m->iterations));
  const json* slots = Member(*opt, "slots");
  if (!slots || !slots->is_array()) return BadField("optimizer.slots", "an array");
  for (const json& s : *slots) {
    if (!s.is_string()) return BadField("optimizer.slots", "an array of names");
    m->slots.push_back(s.get<std::string>());
  }

  const json* metrics = Member(doc, "metrics");
  if (!metrics || !metrics->is_object()) return BadField("metrics", "an object");
  RT_RETURN_IF_ERROR(ReadDouble(*metrics, "loss_sum", "metrics.loss_sum", &m->loss_sum));
  RT_RETURN_IF_ERROR(ReadCount(*metrics, "correct", "metrics.correct", &m->correct));
  RT_RETURN_IF_ERROR(ReadCount(*metrics, "examples", "metrics.examples", &m->examples));
  if (const json* sums = Member(*metrics, "sums")) {  // absent in older backups
    if (!sums->is_array()) return BadField("metrics.sums", "an array of numbers");
    for (const json& v : *sums) {
      double d = 0;
      RT_RETURN_IF_ERROR(ReadDouble(json{{"v", v}}, "v", "metrics.sums[]", &d));
      m->sums.push_back(d);
    }
  }

  const json* history = Member(doc, "history");
  if (!history || !history->is_array()) return BadField("history", "an array");
  // The records become the trainer's epoch results: "epoch" is read as an int, so a
  // float such as 1e30 there would be undefined behaviour, not just a wrong number.
  for (const json& record : *history) {
    if (!record.is_object()) return BadField("history[]", "an array of epoch records");
    const json* epoch = Member(record, "epoch");
    if (epoch && !JsonInt(*epoch, 0, std::numeric_limits<int32_t>::max())) {
      return BadField("history[].epoch", "an epoch number");
    }
  }
  m->history = *history;

  const json* params = Member(doc, "params");
  if (!params || !params->is_array()) return BadField("params", "an array");
  for (const json& p : *params) {
    std::string name;
    RT_RETURN_IF_ERROR(ReadString(p, "name", "params[].name", &name));
    const json* shape = Member(p, "shape");
    if (!shape || !shape->is_array()) return BadField("params[].shape", "an array");
    std::vector<int64_t> dims;
    for (const json& d : *shape) {
      if (!d.is_number_unsigned()) return BadField("params[].shape", "a list of sizes");
      dims.push_back(d.get<int64_t>());
    }
    m->params.emplace_back(std::move(name), std::move(dims));
  }

  RT_RETURN_IF_ERROR(ReadString(doc, "weights_file", "weights_file", &m->weights_file));
  if (m->weights_file != BackupStem(m->global_step) + ".safetensors") {
    return DataLossError("backup metadata names weights file '" + m->weights_file + "' but its global_step " +
                         std::to_string(m->global_step) + " needs '" + BackupStem(m->global_step) + ".safetensors'");
  }
  RT_RETURN_IF_ERROR(ReadInt(doc, "weights_bytes", "weights_bytes", &m->weights_bytes));
  const json* checksums = Member(doc, "checksums");
  if (!checksums || !checksums->is_object()) return BadField("checksums", "an object");
  for (const auto& item : checksums->items()) {
    if (!item.value().is_string()) return BadField("checksums." + item.key(), "a string");
    m->checksums[item.key()] = item.value().get<std::string>();
  }
  return Status::Ok();
}

// An intact backup of another job must be refused, never loaded: FAILED_PRECONDITION.
Status CheckIdentity(const BackupIdentity& id, const Metadata& m) {
  auto refuse = [](const std::string& what) {
    return FailedPreconditionError("the backup belongs to a different job configuration: " + what + "; " +
                                   kRefuseAdvice);
  };
  if (m.job_fingerprint != id.job_fingerprint) {
    return refuse("its job_fingerprint is '" + m.job_fingerprint + "' but this job's is '" + id.job_fingerprint +
                  "' (the model, data, optimizer, batch size or seed differ)");
  }
  if (m.num_workers != id.num_workers) {
    return refuse("its num_workers is " + std::to_string(m.num_workers) + " but this job has " +
                  std::to_string(id.num_workers));
  }
  if (m.steps_per_epoch != id.steps_per_epoch) {
    return refuse("its steps_per_epoch is " + std::to_string(m.steps_per_epoch) + " but this job's is " +
                  std::to_string(id.steps_per_epoch));
  }
  if (m.optimizer_name != id.optimizer_name) {
    return refuse("its optimizer_name is '" + m.optimizer_name + "' but this job's is '" + id.optimizer_name + "'");
  }
  if (m.params.size() != id.params.size()) {
    return refuse("it has " + std::to_string(m.params.size()) + " parameters but this job's model has " +
                  std::to_string(id.params.size()));
  }
  for (size_t i = 0; i < m.params.size(); ++i) {
    const auto& [name, shape] = m.params[i];
    const ParamSpec& want = id.params[i];
    if (name != want.name || shape != want.shape) {
      return refuse("its parameter " + std::to_string(i) + " is '" + name + "' " + ShapeText(shape) +
                    " but this job's is '" + want.name + "' " + ShapeText(want.shape));
    }
  }
  return Status::Ok();
}

StatusOr<TrainState> DecodeImpl(const BackupIdentity& id, const EncodedBackup& encoded) {
  RT_RETURN_IF_ERROR(CheckLayout(id));
  Metadata m;
  RT_RETURN_IF_ERROR(ParseMetadata(encoded.metadata, &m));
  RT_RETURN_IF_ERROR(CheckIdentity(id, m));

  const uint64_t have = encoded.weights.size();
  if (have != static_cast<uint64_t>(m.weights_bytes)) {
    return DataLossError("weights file " + m.weights_file + " is " + std::to_string(have) + " bytes but the metadata says " +
                         std::to_string(m.weights_bytes) + (have < static_cast<uint64_t>(m.weights_bytes)
                                                                ? " (truncated)"
                                                                : " (it was overwritten or appended to)"));
  }
  std::map<std::string, checkpoint::Tensor> tensors;
  std::map<std::string, std::string> st_meta;
  if (Status s = checkpoint::DecodeSafetensors(encoded.weights, &tensors, &st_meta); !s.ok()) {
    return DataLossError("weights file " + m.weights_file + " is not a valid safetensors file: " + s.message());
  }
  if (st_meta["global_step"] != std::to_string(m.global_step)) {
    return DataLossError("weights file " + m.weights_file + " belongs to global_step '" + st_meta["global_step"] +
                         "' but the metadata to " + std::to_string(m.global_step));
  }
  for (const auto& [name, crc] : m.checksums) {
    auto it = tensors.find(name);
    if (it == tensors.end()) {
      return DataLossError("tensor '" + name + "' has a checksum in the metadata but is missing from the weights file");
    }
    const std::string actual = Crc32Hex(it->second.data.data(), it->second.data.size());
    if (actual != crc) {
      return DataLossError("tensor '" + name + "' fails its checksum (CRC-32 " + actual + ", expected " + crc +
                           "): the weights file is corrupted");
    }
  }
  for (const auto& [name, t] : tensors) {
    if (!m.checksums.count(name)) return DataLossError("tensor '" + name + "' has no checksum in the metadata");
  }

  // The weights file must hold exactly the tensors the metadata describes.
  const int64_t n = static_cast<int64_t>(id.num_params());
  std::map<std::string, std::vector<int64_t>> expected;
  for (const ParamSpec& p : id.params) expected[ParamTensor(p.name)] = p.shape;
  for (const std::string& slot : m.slots) {
    if (!expected.emplace(SlotTensor(slot), std::vector<int64_t>{n}).second) {
      return DataLossError("optimizer slot '" + slot + "' is listed twice or clashes with a parameter");
    }
  }
  for (const auto& [name, shape] : expected) {
    auto it = tensors.find(name);
    if (it == tensors.end()) return DataLossError("tensor '" + name + "' is missing from the weights file");
    if (it->second.shape != shape) {
      return DataLossError("tensor '" + name + "' has shape " + ShapeText(it->second.shape) + " but " +
                           ShapeText(shape) + " was expected");
    }
  }
  if (tensors.size() != expected.size()) {
    for (const auto& [name, t] : tensors) {
      if (!expected.count(name)) return DataLossError("the weights file holds an unexpected tensor '" + name + "'");
    }
  }

  // Weights or optimizer state that are NaN or infinite cannot be trained from: the run
  // had diverged when it was backed up, or the file is corrupt in a way the checksums
  // did not catch. Either way the backup is not one to resume from.
  for (const auto& [name, t] : tensors) {
    const auto bad = std::find_if(t.data.begin(), t.data.end(), [](float v) { return !std::isfinite(v); });
    if (bad != t.data.end()) {
      return DataLossError("tensor '" + name + "' holds " + (std::isnan(*bad) ? "NaN" : "infinity") + " at index " +
                           std::to_string(bad - t.data.begin()) + "; the run had diverged or the file is corrupt");
    }
  }

  TrainState state;
  state.global_step = m.global_step;
  state.params.resize(id.num_params());
  for (const ParamSpec& p : id.params) {
    const std::vector<float>& data = tensors[ParamTensor(p.name)].data;
    std::copy(data.begin(), data.end(), state.params.begin() + static_cast<std::ptrdiff_t>(p.offset));
  }
  for (const std::string& slot : m.slots) {
    state.optimizer_slots.emplace_back(slot, std::move(tensors[SlotTensor(slot)].data));
  }
  state.optimizer_iterations = m.iterations;
  state.epoch_loss_sum = m.loss_sum;
  state.epoch_correct = m.correct;
  state.epoch_examples = m.examples;
  state.epoch_metric_sums = std::move(m.sums);
  state.history = std::move(m.history);
  return state;
}

}  // namespace

size_t ParamSpec::size() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t BackupIdentity::num_params() const {
  size_t n = 0;
  for (const ParamSpec& p : params) n += p.size();
  return n;
}

std::string BackupStem(int64_t global_step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "ckpt-%012" PRId64, global_step);
  return buf;
}

namespace {

StatusOr<EncodedBackup> EncodeImpl(const BackupIdentity& id, const TrainState& state) {
  RT_RETURN_IF_ERROR(CheckLayout(id));
  if (state.global_step < 0 || state.global_step >= kMaxStep) {
    return InvalidArgumentError("cannot back up global_step " + std::to_string(state.global_step) +
                                "; it must lie in [0, 10^12)");
  }
  const size_t n = id.num_params();
  if (state.params.size() != n) {
    return InvalidArgumentError("cannot back up: the state has " + std::to_string(state.params.size()) +
                                " parameters but the model has " + std::to_string(n));
  }
  std::set<std::string> slot_names;
  for (const auto& [name, data] : state.optimizer_slots) {
    if (name.empty() || !slot_names.insert(name).second) {
      return InvalidArgumentError("cannot back up: optimizer slot name '" + name + "' is empty or repeated");
    }
    if (data.size() != n) {
      return InvalidArgumentError("cannot back up: optimizer slot '" + name + "' has " + std::to_string(data.size()) +
                                  " values but the model has " + std::to_string(n) + " parameters");
    }
  }
  if (!state.history.is_array()) return InvalidArgumentError("cannot back up: the history is not a JSON array");

  std::vector<checkpoint::TensorView> views;
  json checksums = json::object();
  json params = json::array();
  for (const ParamSpec& p : id.params) {
    const float* data = state.params.data() + p.offset;
    views.push_back({ParamTensor(p.name), p.shape, data});
    checksums[ParamTensor(p.name)] = Crc32Hex(data, p.size());
    params.push_back({{"name", p.name}, {"shape", p.shape}});
  }
  json slots = json::array();
  for (const auto& [name, data] : state.optimizer_slots) {
    views.push_back({SlotTensor(name), {static_cast<int64_t>(n)}, data.data()});
    checksums[SlotTensor(name)] = Crc32Hex(data.data(), data.size());
    slots.push_back(name);
  }
  EncodedBackup out;
  out.weights = checkpoint::EncodeSafetensors(
      views, {{"format", kFormat}, {"global_step", std::to_string(state.global_step)}});

  json m = json::object();  // std::map underneath: the keys come out sorted, the text is deterministic
  m["format"] = kFormat;
  m["version"] = kVersion;
  m["job_fingerprint"] = id.job_fingerprint;
  m["num_workers"] = id.num_workers;
  m["steps_per_epoch"] = id.steps_per_epoch;
  m["global_step"] = state.global_step;
  m["epoch"] = state.global_step / id.steps_per_epoch;
  m["step_in_epoch"] = state.global_step % id.steps_per_epoch;
  m["optimizer"] = {{"name", id.optimizer_name}, {"iterations", state.optimizer_iterations}, {"slots", slots}};
  m["metrics"] = {{"loss_sum", DoubleToJson(state.epoch_loss_sum)},
                  {"correct", state.epoch_correct},
                  {"examples", state.epoch_examples}};
  if (!state.epoch_metric_sums.empty()) {
    json sums = json::array();
    for (double v : state.epoch_metric_sums) sums.push_back(DoubleToJson(v));
    m["metrics"]["sums"] = std::move(sums);
  }
  m["history"] = state.history;
  m["params"] = std::move(params);
  m["weights_file"] = BackupStem(state.global_step) + ".safetensors";
  m["weights_bytes"] = static_cast<uint64_t>(out.weights.size());
  m["checksums"] = std::move(checksums);
  // Names are expected to be UTF-8; replace, rather than throw on, anything else.
  out.metadata = m.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  return out;
}

}  // namespace

StatusOr<EncodedBackup> EncodeBackup(const BackupIdentity& identity, const TrainState& state) {
  try {
    return EncodeImpl(identity, state);
  } catch (const std::exception& e) {  // bad_alloc
    return InternalError(std::string("cannot encode the backup: ") + e.what());
  }
}

StatusOr<TrainState> DecodeBackup(const BackupIdentity& identity, const EncodedBackup& encoded) {
  try {
    return DecodeImpl(identity, encoded);
  } catch (const std::exception& e) {  // nlohmann type errors, bad_alloc
    return DataLossError(std::string("cannot decode the backup: ") + e.what());
  }
}

}  // namespace ringtrain::backup
