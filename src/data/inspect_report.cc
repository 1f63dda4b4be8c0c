// The text and JSON forms of an Inspection (`ringtrain data inspect [--json]`).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "data/inspect.h"

namespace ringtrain::data {
namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string Shape(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string Names(const std::vector<std::string>& names, int64_t total) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  if (total > static_cast<int64_t>(names.size())) {
    s += (names.empty() ? "" : ", ") + std::string("... (") + std::to_string(total) + " in all)";
  }
  return s;
}

std::string Bytes(int64_t b) {
  if (b >= 1000000000) return Fmt("%.2f GB", static_cast<double>(b) / 1e9);
  if (b >= 1000000) return Fmt("%.1f MB", static_cast<double>(b) / 1e6);
  if (b >= 1000) return Fmt("%.1f kB", static_cast<double>(b) / 1e3);
  return std::to_string(b) + " bytes";
}

}  // namespace

std::string FormatInspection(const Inspection& in) {
  std::string s;
  s += in.field + ": " + in.format + "\n";
  s += "  files:      " + std::to_string(in.num_files);
  if (in.source_bytes) s += " (" + Bytes(*in.source_bytes) + ")";
  s += in.files.empty() ? "\n" : ": " + Names(in.files, in.num_files) + "\n";
  s += "  examples:   " + std::to_string(in.examples) + "\n";
  s += "  shape:      " + Shape(in.shape) + " (" + std::to_string(in.floats_per_example) + " floats)\n";
  s += "  labels:     " + in.label_mode +
       (in.num_classes > 0 || in.classes.size() > 0 ? ", " + std::to_string(in.num_classes) + " classes" : "") + "\n";
  // Shares of all labels counted: one per example, or several (masks, multi-hot).
  int64_t labels = 0;
  for (const ClassCount& c : in.classes) labels += c.count;
  for (size_t c = 0; c < in.classes.size(); ++c) {
    const double share = labels > 0 ? 100.0 * static_cast<double>(in.classes[c].count) / static_cast<double>(labels)
                                     : 0;
    // Sources without class names (MNIST, NumPy) name a class by its index: shown once.
    const std::string& name = in.classes[c].name;
    const std::string shown = name == std::to_string(c) ? "" : name;
    char line[256];
    std::snprintf(line, sizeof(line), "    %3zu %-20s %10" PRId64 "  %5.1f%%\n", c, shown.c_str(), in.classes[c].count,
                  share);
    s += line;
  }
  s += "  values:     min " + Fmt("%g", in.min_value) + ", max " + Fmt("%g", in.max_value) + " over " +
       std::to_string(in.value_samples) + " sampled examples: " + in.value_note + "\n";
  s += "sharding: auto_shard_policy " + in.policy + ", " + std::to_string(in.workers) + " worker" +
       (in.workers == 1 ? "" : "s") + "\n";
  for (const WorkerShardInfo& w : in.shards) {
    s += "  worker " + std::to_string(w.index) + ": " + std::to_string(w.examples) + " examples, " +
         std::to_string(w.num_files) + " file" + (w.num_files == 1 ? "" : "s");
    if (!w.files.empty()) s += " (" + Names(w.files, w.num_files) + ")";
    s += "\n    " + w.description + "\n";
  }
  if (in.speed) {
    const DecodeSpeed& d = *in.speed;
    s += "decode speed (worker 0's shard, batch " + std::to_string(d.batch_size) + ", " +
         (d.threads == 0 ? std::string("in memory, no decoding threads")
                         : std::to_string(d.threads) + " thread" + (d.threads == 1 ? "" : "s")) +
         ", " + Fmt("%.1f", d.seconds) + " s):\n";
    s += "  " + Fmt("%.0f", d.images_per_sec) + " images/s, " + Fmt("%.1f", d.decoded_mb_per_sec) +
         " MB/s of decoded floats";
    if (d.source_mb_per_sec) s += ", " + Fmt("%.1f", *d.source_mb_per_sec) + " MB/s of source bytes";
    s += "\n";
  }
  return s;
}

nlohmann::json InspectionToJson(const Inspection& in) {
  nlohmann::json j;
  j["field"] = in.field;
  j["format"] = in.format;
  j["num_files"] = in.num_files;
  j["files"] = in.files;
  j["source_bytes"] = in.source_bytes ? nlohmann::json(*in.source_bytes) : nlohmann::json(nullptr);
  j["examples"] = in.examples;
  j["shape"] = in.shape;
  j["label_mode"] = in.label_mode;
  j["num_classes"] = in.num_classes;
  nlohmann::json classes = nlohmann::json::array();
  for (const ClassCount& c : in.classes) classes.push_back({{"name", c.name}, {"count", c.count}});
  j["classes"] = classes;
  j["values"] = {{"min", in.min_value}, {"max", in.max_value}, {"samples", in.value_samples},
                 {"note", in.value_note}};
  j["auto_shard_policy"] = in.policy;
  j["workers"] = in.workers;
  nlohmann::json shards = nlohmann::json::array();
  for (const WorkerShardInfo& w : in.shards) {
    shards.push_back({{"worker", w.index},
                      {"applied", w.applied},
                      {"description", w.description},
                      {"num_files", w.num_files},
                      {"files", w.files},
                      {"examples", w.examples}});
  }
  j["shards"] = shards;
  if (in.speed) {
    const DecodeSpeed& d = *in.speed;
    j["decode"] = {{"threads", d.threads},
                   {"batch_size", d.batch_size},
                   {"examples", d.examples},
                   {"seconds", d.seconds},
                   {"images_per_sec", d.images_per_sec},
                   {"decoded_mb_per_sec", d.decoded_mb_per_sec},
                   {"source_mb_per_sec", d.source_mb_per_sec ? nlohmann::json(*d.source_mb_per_sec)
                                                             : nlohmann::json(nullptr)}};
  }
  return j;
}

}  // namespace ringtrain::data
