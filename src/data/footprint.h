// What a worker's shard of a data source will hold in memory once loaded, worked out
// before loading it: from the source spec, and for IDX files from their headers (the
// first bytes of each file; gzip is decompressed only that far). Used by the memory
// bound (train/memory_bound.h) so that a header claiming billions of images, or a
// synthetic source of 10^9 examples, is refused before anything is allocated.
//
// Blocking: reads the first bytes of each file. Threading: any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/memory_bound.h"
#include "common/status.h"
#include "data/dataset.h"

namespace ringtrain::data {

// The shard LoadShard(source_json, base_dir, policy, index, num_workers, field) would
// load, as a MemoryUse ("data.train as loaded", about N bytes, the examples and
// their size as the cause, what to change as the remedy). An upper estimate: the
// decoded floats of the examples this worker keeps, the raw bytes of every file it
// reads, and the largest file twice while it is decoded.
// Errors as LoadShard's for a bad spec (kConfig) and for files that are missing, not
// regular files or not IDX (kData).
StatusOr<MemoryUse> EstimateShard(const nlohmann::json& source_json, const std::string& base_dir,
                                  ShardPolicy policy, int index, int num_workers, const std::string& field);

}  // namespace ringtrain::data
