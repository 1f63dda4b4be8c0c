#include "train/memory_bound.h"

#include <algorithm>
#include <limits>

#include "data/dataset.h"
#include "data/footprint.h"
#include "nn/model_memory.h"
#include "nn/optimizers/optimizer.h"

namespace ringtrain::train {

StatusOr<std::vector<MemoryUse>> TrainingMemory(const config::JobConfig& job, int rank, int num_workers) {
  auto model = nn::ModelFootprint::FromJson(job.model);
  if (!model.ok()) return model.status().About(Subject::kConfig);
  auto optimizer = nn::Optimizer::FromJson(job.optimizer);  // allocates nothing before its first update
  if (!optimizer.ok()) return optimizer.status().About(Subject::kConfig);
  const uint64_t batch = static_cast<uint64_t>(job.batch_size_per_worker);
  RT_RETURN_IF_ERROR(model->CheckBatch(batch, "batch_size_per_worker"));
  // The trainer scales the loss by 1 / (global batch) in int arithmetic.
  const uint64_t global = SatMul(batch, static_cast<uint64_t>(std::max(num_workers, 1)));
  if (global > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("the global batch, batch_size_per_worker " + std::to_string(batch) + " x " +
                                std::to_string(num_workers) + " workers = " + std::to_string(global) +
                                ", exceeds 2^31 - 1; lower batch_size_per_worker")
        .About(Subject::kConfig);
  }

  std::vector<MemoryUse> uses;
  const uint64_t slots = static_cast<uint64_t>((*optimizer)->state_floats_per_param());
  // Weights, gradients and the optimizer's slots, plus a snapshot of weights and slots
  // (the state kept for backups and recovery in place).
  // Plus the clipped gradient's copy when the optimizer clips.
  const uint64_t work = static_cast<uint64_t>((*optimizer)->work_floats_per_param());
  const uint64_t per_param = SatMul(SatAdd(2 + slots + work, 1 + slots), sizeof(float));
  uses.push_back({"weights, gradients and optimizer state", SatMul(model->num_params(), per_param),
                  "the model's " + std::to_string(model->num_params()) + " parameters (the most in " +
                      model->largest_layer() + ")",
                  "make the model smaller (fewer units or filters)"});
  // The engine's batch buffers: images, labels (one per output position) and the logits'
  // gradient.
  const uint64_t batches =
      SatMul(batch, SatMul(SatAdd(SatAdd(model->input_size(), model->output_size()), model->output_positions()),
                           sizeof(float)));
  uses.push_back({"activations", SatAdd(model->ActivationBytes(batch, /*training=*/true), batches),
                  "batch_size_per_worker " + std::to_string(batch), "lower batch_size_per_worker"});

  auto policy = data::ParseShardPolicy(job.auto_shard_policy);
  if (!policy.ok()) return policy.status().About(Subject::kConfig);
  for (const auto& [entry, field] : {std::pair<const nlohmann::json*, const char*>{&job.train_data, "data.train"},
                                     {&job.eval_data, "data.eval"}}) {
    if (entry->is_null()) continue;
    if (data::IsDecodingFormat(*entry)) {  // decoded on demand: the pipeline's buffers, not the shard
      uses.push_back(data::EstimatePipeline(field, job.pipeline, job.batch_size_per_worker, model->input_size(),
                                            data::ExamplesFromCount(*entry, *policy, num_workers)));
      continue;
    }
    auto use = data::EstimateShard(*entry, job.base_dir, *policy, rank, num_workers, field);
    if (!use.ok()) return use.status();
    uses.push_back(std::move(use).value());
  }
  return uses;
}

Status CheckShardMemory(const config::JobConfig& job, int rank, int num_workers, const data::Shard& train,
                        const data::Shard* eval, const MemoryBound& bound) {
  if (bound.bytes == 0 || job.pipeline.cache != data::PipelineOptions::Cache::kMemory) return Status::Ok();
  RT_ASSIGN_OR_RETURN(std::vector<MemoryUse> uses, TrainingMemory(job, rank, num_workers));
  for (MemoryUse& use : uses) {
    const data::Shard* shard = use.what == "data.train input pipeline" ? &train
                               : use.what == "data.eval input pipeline" ? eval
                                                                         : nullptr;
    if (!shard) continue;
    const std::string field = use.what.substr(0, use.what.find(' '));
    use = data::EstimatePipeline(field, job.pipeline, job.batch_size_per_worker, shard->spec().size(), shard->size());
  }
  return CheckMemory(uses, bound);
}

Status CheckTrainingMemory(const config::JobConfig& job, int rank, int num_workers, const MemoryBound& bound,
                           int local_workers) {
  RT_ASSIGN_OR_RETURN(std::vector<MemoryUse> uses, TrainingMemory(job, rank, num_workers));
  return CheckMemory(uses, bound, local_workers);
}

}  // namespace ringtrain::train
