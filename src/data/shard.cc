// OpenShard / ParseFormat / Materialize: every format through one sharding path. The
// in-memory formats (mnist_idx, synthetic) keep LoadShard, which reads only what the
// worker needs and whose messages the tests pin; the decoding formats list their files,
// open the worker's (FILE) or all of them, and keep a list of example indices.
#include "data/shard.h"

#include <algorithm>
#include <new>
#include <optional>
#include <utility>

#include "common/json.h"
#include "data/entry_fields.h"
#include "data/memory_source.h"
#include "data/pipeline.h"
#include "data/shard_policy.h"

namespace ringtrain::data {
namespace {

using entry::Invalid;

using json = nlohmann::json;

// An optional integer key in [lo, INT64_MAX], as source_spec.cc reads first/count.
StatusOr<std::optional<int64_t>> OptionalInt(const json& s, const char* key, const std::string& field, int64_t lo) {
  if (!s.contains(key)) return std::optional<int64_t>();
  const json& j = s[key];
  const std::string f = field + "." + key;
  if (!j.is_number_integer()) return Invalid(f, "must be an integer, got " + JsonBrief(j));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Invalid(f, "must be at most " + std::to_string(INT64_MAX) + ", got " + JsonBrief(j));
  }
  const int64_t v = j.get<int64_t>();
  if (v < lo) return Invalid(f, "must be in [" + std::to_string(lo) + ", " + std::to_string(INT64_MAX) + "], got " +
                                    std::to_string(v));
  return std::optional<int64_t>(v);
}

bool IsDecodingFormat(const std::string& f) {
  return f == "image_folder" || f == "tfrecord" || f == "npz" || f == "npy" || f == "keras_dataset";
}

std::string FormatOf(const json& s) {
  if (!s.is_object()) return "";
  auto it = s.find("format");
  return it != s.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// mnist_idx / synthetic: LoadShard's shard, wrapped.
StatusOr<Shard> OpenInMemoryShard(const json& s, const std::string& base_dir, ShardPolicy policy, int index,
                                  int num_workers, const std::string& field) {
  RT_ASSIGN_OR_RETURN(ShardResult r, LoadShard(s, base_dir, policy, index, num_workers, field));
  RT_ASSIGN_OR_RETURN(std::unique_ptr<SourceFormat> format, ParseInMemoryFormat(s, base_dir, field));
  Shard shard;
  shard.applied = r.applied;
  shard.description = std::move(r.description);
  const int64_t n = format->num_files();
  const int64_t step = r.applied == ShardPolicy::kFile ? num_workers : 1;
  for (int64_t j = r.applied == ShardPolicy::kFile ? index : 0; j < n; j += step) {
    shard.files.push_back(format->FileName(j));
  }
  shard.keep = Iota(static_cast<int64_t>(r.data.size()));
  shard.source = std::make_shared<MemorySource>(std::move(r.data), field);
  return shard;
}

StatusOr<Shard> OpenFormatShard(const SourceFormat* format, const json& s, ShardPolicy policy, int index,
                                int num_workers, const std::string& field) {
  RT_RETURN_IF_ERROR(CheckWorker(index, num_workers));
  RT_ASSIGN_OR_RETURN(std::optional<int64_t> first, OptionalInt(s, "first", field, 0));
  RT_ASSIGN_OR_RETURN(std::optional<int64_t> count, OptionalInt(s, "count", field, 1));
  const int64_t num_files = format->num_files();
  RT_ASSIGN_OR_RETURN(ResolvedPolicy resolved,
                      ResolvePolicy(num_files, first.has_value() || count.has_value(), field, policy, num_workers));
  std::vector<int64_t> files;  // the files this worker opens
  if (resolved.policy == ShardPolicy::kFile) {
    for (int64_t j = index; j < num_files; j += num_workers) files.push_back(j);
  } else {
    files = Iota(num_files);
  }
  RT_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, format->Open(files));
  if (!source) return InternalError(field + ": the " + format->format() + " format opened no source");
  Shard shard;
  shard.applied = resolved.policy;
  const int64_t size = source->size();
  int64_t total = 0;  // the examples DATA/OFF choose from
  if (resolved.policy == ShardPolicy::kFile) {
    shard.keep = Iota(size);
  } else {
    RT_RETURN_IF_ERROR(CheckRange(field, first, count, size));
    const int64_t begin = first.value_or(0);
    total = count.value_or(size - begin);
    shard.keep = DataShard(begin, begin + total, resolved.policy, index, num_workers);
  }
  const std::vector<int64_t> numbered = resolved.policy == ShardPolicy::kFile ? files : std::vector<int64_t>();
  shard.description =
      DescribeShard(resolved, index, numbered, num_files, total, static_cast<int64_t>(shard.keep.size()));
  if (shard.keep.empty()) return EmptyShardError(field, index, num_workers, shard.description);
  for (int64_t j : files) shard.files.push_back(format->FileName(j));
  shard.source = std::move(source);
  return shard;
}

StatusOr<Shard> OpenShardImpl(const json& s, const std::string& base_dir, ShardPolicy policy, int index,
                              int num_workers, const std::string& field) {
  RT_RETURN_IF_ERROR(CheckWorker(index, num_workers));
  if (!IsDecodingFormat(FormatOf(s))) return OpenInMemoryShard(s, base_dir, policy, index, num_workers, field);
  RT_ASSIGN_OR_RETURN(std::unique_ptr<SourceFormat> format, ParseFormat(s, base_dir, field));
  return OpenFormatShard(format.get(), s, policy, index, num_workers, field);
}

// Out of memory or a JSON type error that slipped past the checks: one line, no throw.
template <typename F>
StatusOr<Shard> Guarded(const std::string& field, F&& open) {
  try {
    return open();
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(field + ": out of memory opening the data; use fewer examples")
        .About(Subject::kConfig);
  } catch (const std::exception& e) {
    return Invalid(field, std::string("malformed source: ") + e.what());
  }
}

}  // namespace

StatusOr<std::unique_ptr<SourceFormat>> ParseFormat(const json& s, const std::string& base_dir,
                                                    const std::string& field) {
  const std::string f = FormatOf(s);
  try {
    if (f == "image_folder") return ParseImageFolder(s, base_dir, field);
    if (f == "tfrecord") return ParseTfRecord(s, base_dir, field);
    if (f == "npz" || f == "npy") return ParseNumpy(s, base_dir, field);
    if (f == "keras_dataset") return ParseKerasDataset(s, base_dir, field);
    // mnist_idx, synthetic, and the messages for a missing or unknown format.
    return ParseInMemoryFormat(s, base_dir, field);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(field + ": out of memory listing the source").About(Subject::kConfig);
  } catch (const std::exception& e) {  // a backstop: the parsers check types first
    return Invalid(field, std::string("malformed source: ") + e.what());
  }
}

StatusOr<Shard> OpenShard(const json& source_json, const std::string& base_dir, ShardPolicy policy, int index,
                          int num_workers, const std::string& field) {
  return Guarded(field, [&] { return OpenShardImpl(source_json, base_dir, policy, index, num_workers, field); });
}

StatusOr<Shard> OpenShard(const SourceFormat& format, const json& source_json, ShardPolicy policy, int index,
                          int num_workers, const std::string& field) {
  return Guarded(field, [&] { return OpenFormatShard(&format, source_json, policy, index, num_workers, field); });
}

StatusOr<Dataset> Materialize(const Shard& shard) {
  if (!shard.source) return FailedPreconditionError("Materialize of a shard that was not opened");
  const ExampleSpec& spec = shard.spec();
  if (spec.label_size() != 1 || spec.float_targets || !spec.inputs.empty()) {
    const std::string what = !spec.targets.empty() || !spec.inputs.empty()
                                 ? "arrays named per model input or output"
                                 : spec.float_targets ? "float targets" : "several labels per example (masks, targets)";
    return UnimplementedError("a source with " + what + " is read through the input pipeline only: train and "
                              "evaluate it with a job's data.train and data.eval (ringtrain launch)")
        .About(Subject::kConfig);
  }
  Dataset d;
  d.example_shape = spec.shape;
  d.example_size = spec.size();
  d.num_classes = spec.num_classes;
  try {
    d.images.resize(shard.keep.size() * d.example_size);
    d.labels.resize(shard.keep.size());
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError("out of memory decoding " + std::to_string(shard.keep.size()) + " examples of " +
                                  std::to_string(d.example_size) + " values; use fewer examples (count)")
        .About(Subject::kConfig);
  }
  const size_t n = shard.keep.size();
  if (shard.source->in_memory() || n == 0) {
    for (size_t k = 0; k < n; ++k) {
      RT_RETURN_IF_ERROR(shard.source->Read(shard.keep[k], d.images.data() + k * d.example_size, &d.labels[k]));
    }
    return d;
  }
  // Decoded on the input pipeline's threads, in order, straight into place batch by batch.
  const int batch = static_cast<int>(std::min<size_t>(n, 256));
  std::vector<float> x(static_cast<size_t>(batch) * d.example_size);
  std::vector<int32_t> y(static_cast<size_t>(batch));
  Pipeline input(&shard, batch, 0, /*shuffle=*/false, PipelineOptions());
  for (size_t first = 0; first < n; first += static_cast<size_t>(batch)) {
    RT_RETURN_IF_ERROR(input.Next(x.data(), y.data()));
    const size_t b = std::min<size_t>(static_cast<size_t>(batch), n - first);
    std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(b * d.example_size),
              d.images.begin() + static_cast<std::ptrdiff_t>(first * d.example_size));
    std::copy(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(b),
              d.labels.begin() + static_cast<std::ptrdiff_t>(first));
  }
  return d;
}

}  // namespace ringtrain::data
