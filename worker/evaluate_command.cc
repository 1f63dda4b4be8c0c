// `ringtrain evaluate` and `ringtrain predict`: a saved model (the job's "model"
// section + a safetensors file) run over a whole data split on this process, like
// Keras' model.evaluate() / model.predict(). No cluster, no TF_CONFIG.
// Exit codes (common/exit_policy.h): 2 bad flags or job, 3 a data file missing or
// malformed, 6 the model file missing, corrupt or not matching the job's model.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common/exit_policy.h"
#include "common/logging.h"
#include "config/job_config.h"
#include "config/settings.h"
#include "data/dataset.h"
#include "data/shard.h"
#include "flags.h"
#include "env/env.h"
#include "env/file_util.h"
#include "inference/evaluate.h"
#include "inference/predict_input.h"
#include "numpy/npy.h"
#include "inference/report.h"
#include "inference/saved_model.h"

namespace ringtrain::cli {
namespace {

// Everything both commands need: the job's model with the saved weights, and the split.
struct Loaded {
  std::unique_ptr<nn::Model> model;
  std::string model_path;
  std::string split;  // "eval" or "train"
  data::Dataset data;
  int batch = 0;
  nlohmann::json loss, metrics;  // the job's
};

// A bad "model" or data section is the job's fault; anything else concerns the file.
Status FileError(const Status& s, Subject file) {
  return s.About(s.code() == Code::kInvalidArgument ? Subject::kConfig : file);
}

// Returns kExitOk and fills *out, or prints the error and returns the exit code.
int Load(const Flags& flags, Loaded* out) {
  if (!flags.has("job")) return Fail(BadFlag("--job JOB.json is required"));
  const std::string split = flags.get("data", "eval");
  if (split != "eval" && split != "train") return Fail(BadFlag("--data must be eval or train, not '" + split + "'"));
  auto job = config::LoadJobConfig(flags.get("job"));
  if (!job.ok()) return Fail(job.status().About(Subject::kConfig));
  // The model the job saved, unless --model names another; a relative --model resolves
  // against the job file's directory, like every path in the job.
  std::string model_path = job->save_model;
  if (flags.has("model")) {
    model_path = job->Resolve(flags.get("model"));
  } else if (model_path.empty()) {
    return Fail(BadFlag("the job has no save_model: pass --model MODEL.safetensors (the file save_model or "
                        "model_checkpoint wrote)"));
  }
  const nlohmann::json& source = split == "eval" ? job->eval_data : job->train_data;
  if (source.is_null()) {
    return Fail(BadFlag("the job has no data." + split + "; add it to the job or pass --data train"));
  }
  auto batch = flags.get_int("batch_size", job->batch_size_per_worker, 1, 1 << 20);
  if (!batch.ok()) return Fail(batch.status().About(Subject::kConfig));
  auto settings = config::LoadSettings();
  if (!settings.ok()) return Fail(settings.status().About(Subject::kConfig));
  Status fits = inference::CheckInferenceMemory(*job, source, "data." + split, *batch,
                                                flags.has("batch_size") ? "--batch_size" : "batch_size_per_worker",
                                                config::MemoryBoundOf(*settings));
  if (!fits.ok()) return Fail(FileError(fits, Subject::kData));

  auto model = inference::LoadModel(*job, model_path);
  if (!model.ok()) return Fail(FileError(model.status(), Subject::kStorage));
  // The whole split, as one worker of one would see it: no shard.
  auto shard = data::OpenShard(source, job->base_dir, data::ShardPolicy::kOff, 0, 1, "data." + split);
  if (!shard.ok()) return Fail(FileError(shard.status(), Subject::kData));
  if (shard->spec().size() != (*model)->input_size()) {
    return Fail(BadFlag("data." + split + " examples have " + std::to_string(shard->spec().size()) +
                        " values but model.input_shape needs " + std::to_string((*model)->input_size())));
  }
  auto decoded = data::Materialize(*shard);  // any format, decoded in order
  if (!decoded.ok()) return Fail(FileError(decoded.status(), Subject::kData));
  RT_LOG(INFO) << "model " << model_path << ": " << (*model)->num_params() << " parameters; data." << split << ": "
               << decoded->size() << " examples";
  out->model_path = model_path;
  out->model = std::move(model).value();
  out->split = split;
  out->data = std::move(decoded).value();
  out->batch = *batch;
  out->loss = job->loss;
  out->metrics = job->metrics;
  return kExitOk;
}

}  // namespace

int RunEvaluate(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"job", "model", "data", "batch_size"}, {"json"});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  Loaded in;
  if (int code = Load(*flags, &in); code != kExitOk) return code;
  auto r = inference::EvaluateModel(in.model.get(), in.data, in.batch, in.loss, in.metrics);
  if (!r.ok()) return Fail(r.status().WithContext("data." + in.split).About(Subject::kConfig));
  if (flags->get("json") == "true") {
    std::printf("%s\n", inference::EvaluationJson(*r, in.split, in.model_path).dump().c_str());
  } else {
    std::fputs(inference::FormatEvaluation(*r).c_str(), stdout);
  }
  std::fflush(stdout);
  return kExitOk;
}

// `--input PATH` instead of a split of the job's data: the model only (no data split).
int LoadForInput(const Flags& flags, Loaded* out, std::vector<std::string>* names) {
  if (!flags.has("job")) return Fail(BadFlag("--job JOB.json is required"));
  if (flags.has("data")) return Fail(BadFlag("--data and --input exclude each other: --input names the examples"));
  auto job = config::LoadJobConfig(flags.get("job"));
  if (!job.ok()) return Fail(job.status().About(Subject::kConfig));
  std::string model_path = flags.has("model") ? job->Resolve(flags.get("model")) : job->save_model;
  if (model_path.empty()) {
    return Fail(BadFlag("the job has no save_model: pass --model MODEL.safetensors (the file save_model or "
                        "model_checkpoint wrote)"));
  }
  auto batch = flags.get_int("batch_size", job->batch_size_per_worker, 1, 1 << 20);
  if (!batch.ok()) return Fail(batch.status().About(Subject::kConfig));
  auto model = inference::LoadModel(*job, model_path);
  if (!model.ok()) return Fail(FileError(model.status(), Subject::kStorage));
  // Relative to the working directory, like any command-line path.
  auto data = inference::LoadPredictInput(*job, (*model)->input_shape(), flags.get("input"), names);
  if (!data.ok()) return Fail(FileError(data.status(), Subject::kData));
  RT_LOG(INFO) << "model " << model_path << ": " << (*model)->num_params() << " parameters; --input "
               << flags.get("input") << ": " << data->size() << " examples";
  out->model_path = model_path;
  out->model = std::move(model).value();
  out->loss = job->loss;
  out->metrics = job->metrics;
  out->split = "input";
  out->data = std::move(data).value();
  out->batch = *batch;
  return kExitOk;
}

int RunPredict(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"job", "model", "data", "batch_size", "first", "count", "input", "output"}, {"json"});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  Loaded in;
  std::vector<std::string> names;  // with --input: each example's file or index
  const bool input = flags->has("input");
  if (int code = input ? LoadForInput(*flags, &in, &names) : Load(*flags, &in); code != kExitOk) return code;
  const int size = static_cast<int>(in.data.size());
  const std::string range = " (" + (input ? std::string("--input") : "data." + in.split) + " has " +
                            std::to_string(size) + " examples";
  auto first = flags->get_int("first", 0, 0, size - 1);
  if (!first.ok()) return Fail(BadFlag(first.status().message() + range + ")"));
  auto count = flags->get_int("count", size - *first, 1, size - *first);
  if (!count.ok()) {
    return Fail(BadFlag(count.status().message() + range + "; --first " +
                                                     std::to_string(*first) + ")"));
  }
  const size_t begin = static_cast<size_t>(*first);
  auto predicted = inference::Predict(in.model.get(), in.data.images.data() + begin * in.data.example_size,
                                      static_cast<size_t>(*count), in.batch, in.loss);
  if (!predicted.ok()) return Fail(predicted.status().WithContext("loss").About(Subject::kConfig));
  const std::vector<inference::Prediction>& preds = *predicted;
  if (flags->has("output")) {
    // The outputs as Keras' model.predict returns them: [count, units] float32.
    const int64_t units = in.model->num_classes();
    std::vector<float> all;
    all.reserve(preds.size() * static_cast<size_t>(units));
    for (const auto& p : preds) all.insert(all.end(), p.outputs.begin(), p.outputs.end());
    const std::string bytes = numpy::EncodeNpyFloat32({static_cast<int64_t>(preds.size()), units}, all.data());
    Status st = env::WriteFileAtomically(env::Default(), flags->get("output"), bytes);
    if (!st.ok()) return Fail(st.WithContext("--output").About(Subject::kStorage));
  }
  const bool json = flags->get("json") == "true";
  if (json) std::fputs("[", stdout);
  for (size_t i = 0; i < preds.size(); ++i) {
    const size_t index = begin + i;
    const int32_t* label = input ? nullptr : &in.data.labels[index];  // every split has labels; --input none
    if (json) {
      nlohmann::json j = inference::PredictionJson(index, preds[i], label);
      if (input) j["input"] = names[index];
      std::printf("%s%s", i ? ",\n " : "\n ", j.dump().c_str());
    } else {
      std::string line = inference::FormatPrediction(index, preds[i], label);
      if (input) line.insert(line.size() - 1, " input=" + names[index]);
      std::fputs(line.c_str(), stdout);
    }
  }
  if (json) std::fputs("\n]\n", stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace ringtrain::cli
