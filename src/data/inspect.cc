// Inspect: the source as a whole (OpenShard with one worker), every worker's shard under
// the job's policy, a sample of values, and the decode benchmark.
#include "data/inspect.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include "data/pipeline.h"
#include "data/shard.h"
#include "data/source.h"

namespace ringtrain::data {
namespace {

std::vector<std::string> FirstNames(const std::vector<std::string>& names, int n) {
  return {names.begin(), names.begin() + std::min<size_t>(names.size(), static_cast<size_t>(std::max(n, 0)))};
}

// The directories a format's relative file names may be relative to, most specific first.
std::vector<std::filesystem::path> CandidateDirs(const nlohmann::json& source, const std::string& base_dir) {
  namespace fs = std::filesystem;
  const fs::path base = base_dir.empty() ? fs::path(".") : fs::path(base_dir);
  std::vector<fs::path> dirs;
  for (const char* key : {"directory", "path"}) {
    if (!source.contains(key) || !source[key].is_string()) continue;
    fs::path p = source[key].get<std::string>();
    if (p.is_relative()) p = base / p;
    dirs.push_back(std::string(key) == "path" ? p.parent_path() : p);
  }
  dirs.push_back(base);
  return dirs;
}

// The total size of the source's files, when every one of them can be found.
std::optional<int64_t> SourceBytes(const SourceFormat& format, const nlohmann::json& source,
                                   const std::string& base_dir) {
  namespace fs = std::filesystem;
  const std::vector<fs::path> dirs = CandidateDirs(source, base_dir);
  int64_t total = 0;
  for (int64_t f = 0; f < format.num_files(); ++f) {
    const fs::path name = format.FileName(f);
    bool found = false;
    std::error_code ec;
    if (name.is_absolute()) {
      const auto size = fs::file_size(name, ec);
      if (!ec) total += static_cast<int64_t>(size), found = true;
    } else {
      for (const fs::path& d : dirs) {
        const auto size = fs::file_size(d / name, ec);
        if (!ec) {
          total += static_cast<int64_t>(size), found = true;
          break;
        }
      }
    }
    if (!found) return std::nullopt;
  }
  return total;
}

Status CheckOptions(const InspectOptions& o) {
  if (o.workers < 1 || o.workers > 100000) {
    return InvalidArgumentError("workers must be in 1..100000, not " + std::to_string(o.workers))
        .About(Subject::kConfig);
  }
  if (o.threads < 1 || o.threads > 1024) {
    return InvalidArgumentError("threads must be in 1..1024, not " + std::to_string(o.threads))
        .About(Subject::kConfig);
  }
  if (o.batch_size < 1) return InvalidArgumentError("batch size must be positive").About(Subject::kConfig);
  return Status::Ok();
}

Status CountClasses(const Shard& all, Inspection* in) {
  const ExampleSpec& spec = all.spec();
  in->num_classes = spec.num_classes;
  // Float targets are values, not classes, and several outputs' labels are counted by no
  // one class list: say what they are instead.
  if (spec.float_targets) {
    in->num_classes = 0;
    in->label_mode = "float targets, " + std::to_string(spec.label_size()) + " per example";
    return Status::Ok();
  }
  if (!spec.targets.empty()) {
    in->num_classes = 0;
    in->label_mode = "one array per output:";
    for (const ExampleSpec::Part& t : spec.targets) {
      in->label_mode += " " + t.name + " (" + std::to_string(t.size) + " per example, " +
                        (t.float_targets ? std::string("float targets") : std::to_string(t.num_classes) + " classes") +
                        ")";
    }
    return Status::Ok();
  }
  std::vector<int64_t> counts(static_cast<size_t>(std::max(spec.num_classes, 0)), 0);
  // Several labels per example (masks, multi-hot): every label counts, so the example is read.
  const size_t per_example = spec.label_size();
  std::vector<float> x(per_example > 1 ? spec.size() : 0);
  std::vector<int32_t> labels(per_example);
  for (int64_t i : all.keep) {
    if (per_example > 1) {
      RT_RETURN_IF_ERROR(all.source->Read(i, x.data(), labels.data()));
    } else {
      RT_ASSIGN_OR_RETURN(labels[0], all.source->Label(i));
    }
    for (int32_t label : labels) {
      if (label < 0 || label >= spec.num_classes) {
        return DataLossError(all.source->Where(i) + ": label " + std::to_string(label) + " is outside [0, " +
                             std::to_string(spec.num_classes) + ")")
            .About(Subject::kData);
      }
      ++counts[static_cast<size_t>(label)];
    }
  }
  for (int c = 0; c < spec.num_classes; ++c) {
    const bool named = static_cast<size_t>(c) < spec.class_names.size();
    in->classes.push_back({named ? spec.class_names[static_cast<size_t>(c)] : std::to_string(c),
                           counts[static_cast<size_t>(c)]});
  }
  return Status::Ok();
}

// Min and max over up to `samples` evenly spaced examples.
Status SampleValues(const Shard& all, int samples, Inspection* in) {
  const int64_t n = static_cast<int64_t>(all.keep.size());
  const int64_t take = std::min<int64_t>(n, std::max(samples, 1));
  std::vector<float> x(all.spec().size());
  std::vector<int32_t> labels(all.spec().label_size());
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t k = 0; k < take; ++k) {
    const int64_t i = all.keep[static_cast<size_t>(k * n / take)];
    RT_RETURN_IF_ERROR(all.source->Read(i, x.data(), labels.data()));
    for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  in->value_samples = take;
  in->min_value = take > 0 ? lo : 0;
  in->max_value = take > 0 ? hi : 0;
  in->value_note = ValueRangeNote(in->min_value, in->max_value);
  return Status::Ok();
}

}  // namespace

Status DescribeExamples(const Shard& all, int value_samples, Inspection* in) {
  const ExampleSpec& spec = all.spec();
  in->examples = static_cast<int64_t>(all.size());
  in->shape = spec.shape;
  in->floats_per_example = spec.size();
  in->label_mode = spec.categorical ? "categorical" : "int";
  RT_RETURN_IF_ERROR(CountClasses(all, in));
  return SampleValues(all, value_samples, in);
}

StatusOr<DecodeSpeed> MeasureDecode(const Shard& shard, const InspectOptions& o,
                                    std::optional<double> bytes_per_example) {
  if (shard.size() == 0 || !shard.source) {
    return InvalidArgumentError("nothing to decode: the shard is empty").About(Subject::kConfig);
  }
  RT_RETURN_IF_ERROR(CheckOptions(o));
  using Clock = std::chrono::steady_clock;
  PipelineOptions po;
  po.num_parallel_calls = o.threads;
  const int batch = static_cast<int>(std::min<size_t>(static_cast<size_t>(o.batch_size), shard.size()));
  Pipeline pipeline(&shard, batch, /*seed=*/0, /*shuffle=*/false, po);
  std::vector<float> images(static_cast<size_t>(batch) * shard.spec().size());
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  RT_RETURN_IF_ERROR(pipeline.Next(images.data(), labels.data()));  // warm-up: threads started, caches touched
  DecodeSpeed s;
  s.threads = pipeline.threads();
  s.batch_size = batch;
  const auto start = Clock::now();
  double elapsed = 0;
  while ((o.bench_seconds <= 0 || elapsed < o.bench_seconds) && s.examples < o.bench_max_examples) {
    RT_RETURN_IF_ERROR(pipeline.Next(images.data(), labels.data()));
    s.examples += batch;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  }
  s.seconds = elapsed;
  if (elapsed > 0) {
    s.images_per_sec = static_cast<double>(s.examples) / elapsed;
    s.decoded_mb_per_sec = s.images_per_sec * static_cast<double>(shard.spec().size() * sizeof(float)) / 1e6;
    if (bytes_per_example) s.source_mb_per_sec = s.images_per_sec * *bytes_per_example / 1e6;
  }
  return s;
}

StatusOr<Inspection> Inspect(const nlohmann::json& source, const std::string& base_dir,
                             const InspectOptions& options) {
  RT_RETURN_IF_ERROR(CheckOptions(options));
  Inspection in;
  in.field = options.field;
  in.policy = ShardPolicyName(options.policy);
  in.workers = options.workers;

  RT_ASSIGN_OR_RETURN(std::unique_ptr<SourceFormat> format, ParseFormat(source, base_dir, options.field));
  in.format = format->format();
  in.num_files = format->num_files();
  for (int64_t f = 0; f < std::min<int64_t>(in.num_files, options.list_files); ++f) {
    in.files.push_back(format->FileName(f));
  }
  in.source_bytes = SourceBytes(*format, source, base_dir);

  // The whole source (first/count applied) as one worker would read it.
  RT_ASSIGN_OR_RETURN(Shard all, OpenShard(source, base_dir, ShardPolicy::kOff, 0, 1, options.field));
  RT_RETURN_IF_ERROR(DescribeExamples(all, options.value_samples, &in));

  std::optional<Shard> first_worker;
  for (int k = 0; k < options.workers; ++k) {
    RT_ASSIGN_OR_RETURN(Shard shard, OpenShard(source, base_dir, options.policy, k, options.workers, options.field));
    WorkerShardInfo w;
    w.index = k;
    w.applied = ShardPolicyName(shard.applied);
    w.description = shard.description;
    w.num_files = static_cast<int64_t>(shard.files.size());
    w.files = FirstNames(shard.files, options.list_files);
    w.examples = static_cast<int64_t>(shard.size());
    in.shards.push_back(std::move(w));
    if (k == 0) first_worker = std::move(shard);
  }

  if (options.bench_seconds > 0 && first_worker && first_worker->size() > 0) {
    std::optional<double> bytes_per_example;
    // Source bytes per example are known when the whole source's files are (first/count
    // would make the average meaningless: the files hold more than the examples read).
    if (in.source_bytes && in.examples > 0 && !source.contains("first") && !source.contains("count")) {
      bytes_per_example = static_cast<double>(*in.source_bytes) / static_cast<double>(in.examples);
    }
    RT_ASSIGN_OR_RETURN(DecodeSpeed speed, MeasureDecode(*first_worker, options, bytes_per_example));
    in.speed = speed;
  }
  return in;
}

std::string ValueRangeNote(float min_value, float max_value) {
  if (min_value >= 0.f && max_value <= 1.f) return "[0, 1] (uint8 values / 255, or rescaled)";
  if (min_value >= 0.f && max_value <= 255.f) {
    return "[0, 255] (Keras' image pixel values; \"rescale\": 0.00392156862745098 gives [0, 1])";
  }
  if (min_value >= -1.f && max_value <= 1.f) return "[-1, 1]";
  return "values as stored (float data, not scaled)";
}

}  // namespace ringtrain::data
