// The whole job-file path a worker runs before it trains: the job parser, then the
// parsers the trainer runs on the parsed job (model, optimizer, learning-rate
// schedule, data sources, shard policy, model_checkpoint's file name pattern) and the
// memory estimate. When the job is small
// enough, the model is also built and run forward on a batch of two, and a synthetic
// source is generated, so that shapes the parsers accept are shapes the layers handle.
#include <cmath>
#include <string>

#include "backup/backup.h"
#include "common/memory_bound.h"
#include "config/job_config.h"
#include "data/dataset.h"
#include "data/footprint.h"
#include "data/source_spec.h"
#include "fuzz_target.h"
#include "nn/schedules/lr_schedule.h"
#include "nn/model.h"
#include "nn/model_memory.h"
#include "nn/optimizers/optimizer.h"

using namespace ringtrain;

namespace {

// Paths in fuzzed jobs resolve here, where nothing exists: no file is ever read.
constexpr const char* kBaseDir = "/nonexistent-ringtrain-fuzz";
// What one input may allocate: the fuzzer's memory limit must never be what stops it.
constexpr uint64_t kMaxBytes = uint64_t{32} << 20;

void CheckError(const Status& s) {
  FUZZ_CHECK(!s.ok());
  FUZZ_CHECK(!s.message().empty());
  FUZZ_CHECK(s.message().find('\n') == std::string::npos);  // one line
}

void RunModel(const config::JobConfig& job) {
  auto footprint = nn::ModelFootprint::FromJson(job.model);
  if (!footprint.ok()) return CheckError(footprint.status());
  (void)footprint->CheckBatch(static_cast<uint64_t>(job.batch_size_per_worker), "batch_size_per_worker");
  (void)footprint->ActivationBytes(static_cast<uint64_t>(job.batch_size_per_worker), true);
  constexpr int kBatch = 2;
  if (SatMul(footprint->num_params(), 8) > kMaxBytes || footprint->ActivationBytes(kBatch, true) > kMaxBytes ||
      SatMul(footprint->input_size(), kBatch * sizeof(float)) > kMaxBytes) {
    return;
  }
  auto model = nn::Model::FromJson(job.model, job.seed);
  FUZZ_CHECK(model.ok());  // the footprint accepted the same description
  nn::Model& m = **model;
  FUZZ_CHECK(m.num_params() == footprint->num_params());
  FUZZ_CHECK(m.input_size() == footprint->input_size());
  (void)m.Summary();
  std::vector<float> input(m.input_size() * kBatch, 0.5f);
  const float* logits = m.Forward(input.data(), kBatch, /*training=*/true);
  for (int i = 0; i < kBatch * m.num_classes(); ++i) FUZZ_CHECK(std::isfinite(logits[i]));
  std::vector<float> grad(static_cast<size_t>(kBatch) * m.num_classes(), 0.25f);
  m.Backward(grad.data());
}

void RunData(const config::JobConfig& job, const nlohmann::json& source, const std::string& field) {
  if (source.is_null()) return;
  auto spec = data::ParseSourceSpec(source, kBaseDir, field);
  if (!spec.ok()) {
    CheckError(spec.status());
    FUZZ_CHECK(spec.status().subject() == Subject::kConfig);
    return;
  }
  auto policy = data::ParseShardPolicy(job.auto_shard_policy);
  if (!policy.ok()) return CheckError(policy.status());
  for (int workers : {1, 3}) {
    auto use = data::EstimateShard(source, kBaseDir, *policy, workers - 1, workers, field);
    if (!use.ok()) {
      CheckError(use.status());
      continue;
    }
    if (spec->format == data::SourceSpec::Format::kSynthetic && use->bytes <= kMaxBytes / 8) {
      auto shard = data::LoadShard(source, kBaseDir, *policy, workers - 1, workers, field);
      if (shard.ok()) {
        FUZZ_CHECK(shard->data.images.size() == shard->data.size() * shard->data.example_size);
      } else {
        CheckError(shard.status());
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto job = config::ParseJobConfig(text, kBaseDir);
  if (!job.ok()) {
    CheckError(job.status());
    FUZZ_CHECK(job.status().subject() == Subject::kConfig);
    return 0;
  }
  // What the chief compares and fingerprints.
  (void)job->CanonicalJson();
  (void)job->TrajectoryFingerprint();
  for (int e = 0; e < 3; ++e) (void)job->ValidateAfterEpoch(e);

  auto optimizer = nn::Optimizer::FromJson(job->optimizer);
  if (optimizer.ok()) {
    FUZZ_CHECK(std::isfinite((*optimizer)->learning_rate()) && (*optimizer)->learning_rate() > 0);
    // Two updates of a few parameters with the parsed hyper-parameters (under UBSan:
    // no conversion of an out-of-range double to float).
    std::vector<float> params(4, 1.0f), grads(4, 0.5f);
    (*optimizer)->Apply(params.data(), grads.data(), params.size());
    (*optimizer)->Apply(params.data(), grads.data(), params.size());
  } else {
    CheckError(optimizer.status());
  }
  if (!job->lr_schedule.is_null()) {
    auto schedule = nn::LrSchedule::FromJson(job->lr_schedule);
    if (schedule.ok()) {
      (void)(*schedule)->Describe();
      for (int64_t step : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1} << 40}) {
        const double lr = (*schedule)->LearningRate(static_cast<int>(step % 1000), step);
        FUZZ_CHECK(std::isfinite(lr) && lr >= 0);
      }
    } else {
      CheckError(schedule.status());
    }
  }
  if (!job->model_checkpoint.empty()) {
    auto path = backup::FormatCheckpointPath(job->model_checkpoint, 7);
    if (!path.ok()) CheckError(path.status());
  }
  RunModel(*job);
  RunData(*job, job->train_data, "data.train");
  RunData(*job, job->eval_data, "data.eval");
  return 0;
}
