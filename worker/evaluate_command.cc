// `ringtrain evaluate` and `ringtrain predict`: a saved model (the job's "model"
// section + a safetensors file) run over a whole data split on this process, like
// Keras' model.evaluate() / model.predict(). No cluster, no TF_CONFIG.
// Exit codes: 2 bad flags or job, 3 a data file missing or malformed, 6 the model file
// missing, corrupt or not matching the job's model.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common/exit_codes.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "data/dataset.h"
#include "flags.h"
#include "inference/evaluate.h"
#include "inference/report.h"
#include "inference/saved_model.h"

namespace ringtrain::cli {
namespace {

// Everything both commands need: the job's model with the saved weights, and the split.
struct Loaded {
  std::unique_ptr<nn::Model> model;
  std::string split;  // "eval" or "train"
  data::Dataset data;
  int batch = 0;
};

int ModelExitCode(const Status& s) {
  if (s.subject() != Subject::kUnknown) return ExitCodeFor(s);
  // A bad "model" section is the job's fault; anything else concerns the file.
  return s.code() == Code::kInvalidArgument ? kExitBadConfig : kExitCheckpoint;
}

int DataExitCode(const Status& s) {
  if (s.subject() != Subject::kUnknown) return ExitCodeFor(s);
  if (s.code() == Code::kNotFound || s.code() == Code::kDataLoss) return kExitBadData;
  return s.code() == Code::kInvalidArgument ? kExitBadConfig : kExitInternal;
}

// Returns kExitOk and fills *out, or prints the error and returns the exit code.
int Load(const Flags& flags, Loaded* out) {
  if (!flags.has("job")) return Fail(kExitBadConfig, InvalidArgumentError("--job JOB.json is required"));
  if (!flags.has("model")) {
    return Fail(kExitBadConfig, InvalidArgumentError("--model MODEL.safetensors is required (the file the job's "
                                                     "save_model or model_checkpoint wrote)"));
  }
  const std::string split = flags.get("data", "eval");
  if (split != "eval" && split != "train") {
    return Fail(kExitBadConfig, InvalidArgumentError("--data must be eval or train, not '" + split + "'"));
  }
  auto job = config::LoadJobConfig(flags.get("job"));
  if (!job.ok()) return Fail(kExitBadConfig, job.status());
  const nlohmann::json& source = split == "eval" ? job->eval_data : job->train_data;
  if (source.is_null()) {
    return Fail(kExitBadConfig, InvalidArgumentError("the job has no data." + split + "; add it to the job or pass "
                                                     "--data train"));
  }
  auto batch = flags.get_int("batch_size", job->batch_size_per_worker, 1, 1 << 20);
  if (!batch.ok()) return Fail(kExitBadConfig, batch.status());
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(kExitBadConfig, settings.status());
  Status fits = inference::CheckInferenceMemory(*job, source, "data." + split, *batch,
                                                flags.has("batch_size") ? "--batch_size" : "batch_size_per_worker",
                                                config::MemoryBoundOf(*settings));
  if (!fits.ok()) return Fail(DataExitCode(fits), fits);

  const std::string model_path = flags.get("model");
  auto model = inference::LoadModel(*job, model_path);
  if (!model.ok()) return Fail(ModelExitCode(model.status()), model.status());
  // The whole split, as one worker of one would see it: no shard.
  auto shard = data::LoadShard(source, job->base_dir, data::ShardPolicy::kOff, 0, 1, "data." + split);
  if (!shard.ok()) return Fail(DataExitCode(shard.status()), shard.status());
  if (shard->data.example_size != (*model)->input_size()) {
    return Fail(kExitBadConfig, InvalidArgumentError("data." + split + " examples have " +
                                                     std::to_string(shard->data.example_size) +
                                                     " values but model.input_shape needs " +
                                                     std::to_string((*model)->input_size())));
  }
  RT_LOG(INFO) << "model " << model_path << ": " << (*model)->num_params() << " parameters; data." << split << ": "
               << shard->data.size() << " examples";
  out->model = std::move(model).value();
  out->split = split;
  out->data = std::move(shard->data);
  out->batch = *batch;
  return kExitOk;
}

}  // namespace

int RunEvaluate(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"job", "model", "data", "batch_size"}, {"json"});
  if (!flags.ok()) return Fail(kExitBadConfig, flags.status());
  Loaded in;
  if (int code = Load(*flags, &in); code != kExitOk) return code;
  auto r = inference::EvaluateModel(in.model.get(), in.data, in.batch);
  if (!r.ok()) return Fail(kExitBadConfig, r.status().WithContext("data." + in.split));
  if (flags->get("json") == "true") {
    std::printf("%s\n", inference::EvaluationJson(*r, in.split, flags->get("model")).dump().c_str());
  } else {
    std::fputs(inference::FormatEvaluation(*r).c_str(), stdout);
  }
  std::fflush(stdout);
  return kExitOk;
}

int RunPredict(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"job", "model", "data", "batch_size", "first", "count"}, {"json"});
  if (!flags.ok()) return Fail(kExitBadConfig, flags.status());
  Loaded in;
  if (int code = Load(*flags, &in); code != kExitOk) return code;
  const int size = static_cast<int>(in.data.size());
  const std::string range = " (data." + in.split + " has " + std::to_string(size) + " examples";
  auto first = flags->get_int("first", 0, 0, size - 1);
  if (!first.ok()) return Fail(kExitBadConfig, InvalidArgumentError(first.status().message() + range + ")"));
  auto count = flags->get_int("count", size - *first, 1, size - *first);
  if (!count.ok()) {
    return Fail(kExitBadConfig, InvalidArgumentError(count.status().message() + range + "; --first " +
                                                     std::to_string(*first) + ")"));
  }
  const size_t begin = static_cast<size_t>(*first);
  std::vector<inference::Prediction> preds = inference::Predict(
      in.model.get(), in.data.images.data() + begin * in.data.example_size, static_cast<size_t>(*count), in.batch);
  const bool json = flags->get("json") == "true";
  if (json) std::fputs("[", stdout);
  for (size_t i = 0; i < preds.size(); ++i) {
    const size_t index = begin + i;
    const int32_t* label = &in.data.labels[index];  // every source has labels
    if (json) {
      std::printf("%s%s", i ? ",\n " : "\n ", inference::PredictionJson(index, preds[i], label).dump().c_str());
    } else {
      std::fputs(inference::FormatPrediction(index, preds[i], label).c_str(), stdout);
    }
  }
  if (json) std::fputs("\n]\n", stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace ringtrain::cli
