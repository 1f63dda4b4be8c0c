// The input pipeline's cache of decoded examples (pipeline.h, "cache"): a memory cache
// (cache: true) and a file cache (cache: "path"), both indexed by the example's position
// in the shard (0 .. n-1). Internal to src/data.
//
// Protocol, per example k: Begin(k) either copies the cached example (kHit), or hands the
// caller the job of filling it (kFill: decode, then Fill or Abandon), or says the cache
// cannot take it (kMiss: decode, do not fill). While one thread fills k, another's
// Begin(k) waits for it (a decode is bounded), so each example is decoded once.
//
// File cache: the file at `path` is used when it is complete and its header carries the
// same fingerprint, example count and size; otherwise it is rebuilt: examples are written
// to a temporary file beside it, which is fsynced and renamed onto `path` when the last
// example arrives (so a file at `path` is always complete), and deleted when the cache is
// destroyed unfinished. A write error (a full disk) is logged once and turns the cache
// off: training goes on decoding.
//
// Threading: Begin/Fill/Abandon from any threads. Blocking: Begin may wait for another
// thread's decode; Fill writes to the file; the last Fill fsyncs and renames.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"

namespace ringtrain::data {

class ExampleCache {
 public:
  enum class Lookup { kHit, kFill, kMiss };
  virtual ~ExampleCache() = default;
  // `labels`: the example's labels_per_example labels.
  virtual Lookup Begin(int64_t k, float* x, int32_t* labels) = 0;
  virtual void Fill(int64_t k, const float* x, const int32_t* labels) = 0;
  virtual void Abandon(int64_t k) = 0;
  // Whether every example is cached (a file cache: complete on disk).
  virtual bool complete() const = 0;
};

// n examples of `example_size` floats and labels_per_example labels (1 but for per-position
// targets, e.g. segmentation masks). RESOURCE_EXHAUSTED when it cannot be allocated.
StatusOr<std::unique_ptr<ExampleCache>> NewMemoryCache(int64_t n, size_t example_size, size_t labels_per_example = 1);
// As above, in the file `path`, keyed by `fingerprint`. INVALID_ARGUMENT (about kConfig)
// when the temporary file beside `path` cannot be created (naming it).
StatusOr<std::unique_ptr<ExampleCache>> OpenFileCache(const std::string& path, uint64_t fingerprint, int64_t n,
                                                      size_t example_size, size_t labels_per_example = 1);

}  // namespace ringtrain::data
