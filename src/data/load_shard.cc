// LoadShard: resolves the shard policy, then reads (MNIST) or generates (synthetic)
// only what the worker needs.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/mnist_source.h"
#include "data/source_spec.h"
#include "data/synthetic.h"

namespace ringtrain::data {
namespace {

std::string Plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// "0, 2" for the files a worker reads (shortened when there are many).
std::string FileList(const std::vector<int64_t>& files) {
  std::string s;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i == 8) return s + ", ... (" + std::to_string(files.size()) + " in all)";
    s += (i ? ", " : "") + std::to_string(files[i]);
  }
  return s;
}

// A policy after AUTO and num_workers == 1 are resolved, and how it was chosen.
struct Resolved {
  ShardPolicy policy;
  std::string prefix;  // "AUTO -> DATA (1 file for 2 workers)"
};

StatusOr<Resolved> Resolve(const SourceSpec& spec, ShardPolicy policy, int num_workers) {
  const int64_t files = spec.num_files();
  const bool has_range = spec.format == SourceSpec::Format::kMnistIdx && (spec.first || spec.count);
  const std::string counts = std::string("(") + Plural(files, "file") + " for " + Plural(num_workers, "worker") + ")";
  if (num_workers == 1) return Resolved{ShardPolicy::kOff, std::string("1 worker, no sharding")};
  switch (policy) {
    case ShardPolicy::kAuto:
      if (files >= num_workers && !has_range) return Resolved{ShardPolicy::kFile, "AUTO -> FILE " + counts};
      if (files >= num_workers) {
        return Resolved{ShardPolicy::kData, "AUTO -> DATA (first/count select a range across files)"};
      }
      return Resolved{ShardPolicy::kData, "AUTO -> DATA " + counts};
    case ShardPolicy::kFile:
      if (files < num_workers) {
        return InvalidArgumentError("FILE sharding needs at least " + std::to_string(num_workers) + " files but " +
                                    spec.field + " has " + std::to_string(files) + "; use DATA or AUTO")
            .About(Subject::kConfig);
      }
      if (has_range) {
        return InvalidArgumentError(spec.field + ": first/count cannot be combined with FILE sharding; use DATA")
            .About(Subject::kConfig);
      }
      return Resolved{ShardPolicy::kFile, "FILE " + counts};
    case ShardPolicy::kData:
      return Resolved{ShardPolicy::kData, "DATA"};
    case ShardPolicy::kOff:
      return Resolved{ShardPolicy::kOff, "OFF (every worker reads everything)"};
  }
  return InternalError("unknown shard policy");
}

// The examples [begin, end) of the concatenated source that this worker keeps.
std::vector<int64_t> DataShard(int64_t begin, int64_t end, ShardPolicy policy, int index, int num_workers) {
  std::vector<int64_t> keep;
  const int64_t step = policy == ShardPolicy::kData ? num_workers : 1;
  const int64_t start = policy == ShardPolicy::kData ? begin + index : begin;
  for (int64_t i = start; i < end; i += step) keep.push_back(i);
  return keep;
}

Status CheckRange(const SourceSpec& spec, int64_t total) {
  const int64_t first = spec.first.value_or(0);
  if (first >= total) {
    return InvalidArgumentError(spec.field + ".first: " + std::to_string(first) + " is past the end of the " +
                                std::to_string(total) + " examples in the files")
        .About(Subject::kConfig);
  }
  if (spec.count && *spec.count > total - first) {
    return InvalidArgumentError(spec.field + ".count: first (" + std::to_string(first) + ") + count (" +
                                std::to_string(*spec.count) + ") exceeds the " + std::to_string(total) +
                                " examples in the files")
        .About(Subject::kConfig);
  }
  return Status::Ok();
}

// Scales the chosen raw examples to [0, 1] floats.
Dataset FromRaw(const RawExamples& raw, const std::vector<int64_t>& keep) {
  Dataset d;
  d.example_shape = {static_cast<int>(raw.rows), static_cast<int>(raw.cols)};
  d.example_size = static_cast<size_t>(raw.rows) * raw.cols;
  d.num_classes = kMnistClasses;
  d.images.resize(keep.size() * d.example_size);
  d.labels.resize(keep.size());
  for (size_t k = 0; k < keep.size(); ++k) {
    const uint8_t* src = raw.pixels.data() + static_cast<size_t>(keep[k]) * d.example_size;
    float* dst = d.images.data() + k * d.example_size;
    for (size_t p = 0; p < d.example_size; ++p) dst[p] = src[p] / 255.f;
    d.labels[k] = raw.labels[keep[k]];
  }
  return d;
}

Dataset Generate(const SourceSpec& spec, const std::vector<int64_t>& ids) {
  SyntheticGenerator gen(spec.synthetic);
  Dataset d;
  d.example_shape = spec.synthetic.shape;
  d.example_size = gen.example_size();
  d.num_classes = spec.synthetic.classes;
  d.images.resize(ids.size() * d.example_size);
  d.labels.resize(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    d.labels[k] = gen.Example(static_cast<uint64_t>(ids[k]), d.images.data() + k * d.example_size);
  }
  return d;
}

}  // namespace

StatusOr<ShardPolicy> ParseShardPolicy(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "AUTO") return ShardPolicy::kAuto;
  if (upper == "FILE") return ShardPolicy::kFile;
  if (upper == "DATA") return ShardPolicy::kData;
  if (upper == "OFF") return ShardPolicy::kOff;
  return InvalidArgumentError("unknown shard policy \"" + name + "\"; valid policies: AUTO, FILE, DATA, OFF");
}

const char* ShardPolicyName(ShardPolicy p) {
  switch (p) {
    case ShardPolicy::kAuto: return "AUTO";
    case ShardPolicy::kFile: return "FILE";
    case ShardPolicy::kData: return "DATA";
    case ShardPolicy::kOff: return "OFF";
  }
  return "UNKNOWN";
}

StatusOr<ShardResult> LoadShard(const nlohmann::json& source_json, const std::string& base_dir,
                                ShardPolicy policy, int index, int num_workers) {
  return LoadShard(source_json, base_dir, policy, index, num_workers, "source");
}

namespace {

StatusOr<ShardResult> LoadShardImpl(const nlohmann::json& source_json, const std::string& base_dir,
                                    ShardPolicy policy, int index, int num_workers, const std::string& field) {
  if (num_workers < 1 || index < 0 || index >= num_workers) {
    return InvalidArgumentError("worker index " + std::to_string(index) + " is out of range for " +
                                Plural(num_workers, "worker"));
  }
  RT_ASSIGN_OR_RETURN(SourceSpec spec, ParseSourceSpec(source_json, base_dir, field));
  RT_ASSIGN_OR_RETURN(Resolved resolved, Resolve(spec, policy, num_workers));

  ShardResult result;
  result.applied = resolved.policy;
  const std::string who = "worker " + std::to_string(index);
  int64_t total = 0;  // examples in the source (after first/count)
  std::vector<int64_t> files;  // FILE: the files this worker reads
  if (resolved.policy == ShardPolicy::kFile) {
    for (int64_t j = index; j < spec.num_files(); j += num_workers) files.push_back(j);
  }

  if (spec.format == SourceSpec::Format::kMnistIdx) {
    if (resolved.policy == ShardPolicy::kFile) {
      RT_ASSIGN_OR_RETURN(RawExamples raw, LoadMnistFiles(spec, files));
      result.data = FromRaw(raw, DataShard(0, static_cast<int64_t>(raw.size()), ShardPolicy::kOff, 0, 1));
    } else {
      std::vector<int64_t> all(spec.images.size());
      for (size_t j = 0; j < all.size(); ++j) all[j] = static_cast<int64_t>(j);
      RT_ASSIGN_OR_RETURN(RawExamples raw, LoadMnistFiles(spec, all));
      RT_RETURN_IF_ERROR(CheckRange(spec, static_cast<int64_t>(raw.size())));
      const int64_t first = spec.first.value_or(0);
      total = spec.count.value_or(static_cast<int64_t>(raw.size()) - first);
      result.data = FromRaw(raw, DataShard(first, first + total, resolved.policy, index, num_workers));
    }
  } else {
    const int64_t first = *spec.first, count = *spec.count;
    total = count;
    std::vector<int64_t> ids;
    if (resolved.policy == ShardPolicy::kFile) {
      // Virtual file f holds the contiguous ids [first + f*count/files, first + (f+1)*count/files).
      const int64_t nf = spec.virtual_files;
      for (int64_t f : files) {
        const auto lo = static_cast<int64_t>(static_cast<__int128>(f) * count / nf);
        const auto hi = static_cast<int64_t>(static_cast<__int128>(f + 1) * count / nf);
        for (int64_t i = lo; i < hi; ++i) ids.push_back(first + i);
      }
    } else {
      ids = DataShard(first, first + count, resolved.policy, index, num_workers);
    }
    result.data = Generate(spec, ids);
  }

  const int64_t kept = static_cast<int64_t>(result.data.size());
  if (resolved.policy == ShardPolicy::kFile) {
    result.description = resolved.prefix + ": " + who + " reads file" + (files.size() == 1 ? " " : "s ") +
                         FileList(files) + " of " + std::to_string(spec.num_files()) + " (" +
                         Plural(kept, "example") + ")";
  } else if (resolved.policy == ShardPolicy::kData) {
    result.description = resolved.prefix + ": " + who + " reads " + std::to_string(kept) + " of " +
                         Plural(total, "example");
  } else {
    result.description = resolved.prefix + ": " + who + " reads all " + Plural(kept, "example");
  }
  if (kept == 0) {
    return InvalidArgumentError(field + ": " + who + " of " + std::to_string(num_workers) +
                                " would get no examples (" + result.description +
                                "); use more data or fewer workers")
        .About(Subject::kConfig);
  }
  return result;
}

}  // namespace

StatusOr<ShardResult> LoadShard(const nlohmann::json& source_json, const std::string& base_dir,
                                ShardPolicy policy, int index, int num_workers, const std::string& field) {
  try {
    return LoadShardImpl(source_json, base_dir, policy, index, num_workers, field);
  } catch (const std::bad_alloc&) {
    // A backstop: the memory bound (data/footprint.h) is checked before loading.
    return ResourceExhaustedError(field + ": out of memory loading the data; use fewer examples")
        .About(Subject::kConfig);
  }
}

}  // namespace ringtrain::data
