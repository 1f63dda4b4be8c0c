// The input pipeline: batches of a worker's shard, in BatchIterator's order (each pass a
// permutation drawn from (seed, pass) alone), decoded by a pool of threads ahead of the
// training loop, as tf.data's map(num_parallel_calls).batch().prefetch(), optionally
// cached. A batch's contents depend only on the order, never on the thread count or on
// timing: the same job gives the same bits with 1 thread or 16.
//
// Job file: "data": {"pipeline": {"num_parallel_calls": "AUTOTUNE" | N,
//                                 "prefetch": "AUTOTUNE" | N, "cache": false | true | "path"}}
//   num_parallel_calls  decoding threads (AUTOTUNE: the cores this process may use)
//   prefetch            batches decoded ahead of the one training takes (AUTOTUNE: 2)
//   cache               true keeps decoded examples in memory after their first decode;
//                       a path caches them to that file (per worker and split), used by
//                       later passes and later runs of the same source
//
// An in-memory source (mnist_idx, synthetic: Source::in_memory()) is copied on the
// caller's thread exactly as BatchIterator does: no threads, no cache, no wait. Any other
// source is decoded by num_parallel_calls threads that claim the examples of the next
// `prefetch` batches in order (prefetch 0: only while Next waits) and decode each into its
// fixed place; each example is decoded once per pass, or once at all with a cache.
//
// Threading: one thread at a time calls Next, Seek and the accessors; the decoding
// threads are internal. Blocking: Next waits for its batch (a condition variable with a
// deadline in a loop that also watches for failure; a pipeline that decodes nothing for
// 10 minutes fails with DEADLINE_EXCEEDED); Seek waits for the decodes under way (each
// bounded by the source). Errors: see Next; a cache that cannot be set up is reported by
// the first Next (RESOURCE_EXHAUSTED for memory, INVALID_ARGUMENT for a file that cannot
// be created), a cache file that cannot be written is logged and dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "data/shard.h"

namespace ringtrain::data {

inline constexpr int kAutotune = -1;  // tf.data.AUTOTUNE

struct PipelineOptions {
  int num_parallel_calls = kAutotune;
  int prefetch = kAutotune;
  enum class Cache { kNone, kMemory, kFile };
  Cache cache = Cache::kNone;
  std::string cache_path;  // kFile: used as given (the trainer appends ".<split>.w<rank>")
  // What identifies the source for the file cache (the trainer: the job's source entry);
  // with the shard (files, examples, shape) it makes the fingerprint in the file's
  // header: a file with another fingerprint is rebuilt, never used.
  std::string cache_key;
};

// "data.pipeline" of a job (null: the defaults). INVALID_ARGUMENT about kConfig naming
// the field. Relative cache paths resolve against base_dir.
StatusOr<PipelineOptions> ParsePipelineOptions(const nlohmann::json& j, const std::string& base_dir,
                                               const std::string& field);

// The per-example random stream augmentation layers draw from: a function of the shuffle
// seed, the pass and the example's index in the shard only.
uint64_t ExampleSeed(uint64_t seed, uint64_t pass, int64_t example);

class Pipeline {
 public:
  // `shard` must outlive the pipeline. shuffle=false keeps the shard's order (evaluation).
  // Starts the decoding threads (none for an in-memory source).
  Pipeline(const Shard* shard, int batch_size, uint64_t seed, bool shuffle, const PipelineOptions& options);
  ~Pipeline();  // stops and joins the threads; never throws
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // The next batch: images [batch, spec().size()], labels [batch, spec().label_size()].
  // Blocks until it is
  // decoded (bounded: a decode that fails is reported, none can block forever).
  // DATA_LOSS about kData naming the file for an example that cannot be decoded; the
  // pipeline is then broken and every later call returns the same error.
  Status Next(float* images, int32_t* labels);
  // Position, as BatchIterator: passes completed and offset within the current pass.
  uint64_t pass() const;
  size_t offset() const;
  // Restores a position (an offset >= size counts on into later passes); discards work
  // decoded ahead (none when the position is the current one). A broken pipeline stays
  // broken.
  void Seek(uint64_t pass, size_t offset);

  // Seconds Next spent waiting for decoding since construction (for input_wait_share).
  double wait_seconds() const;
  int threads() const;          // decoding threads in use
  int prefetch_batches() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringtrain::data
