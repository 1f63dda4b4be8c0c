// The evaluator end to end on files: each checkpoint evaluated once, in order, with the
// numbers inference::EvaluateModel gives for those weights; a restart goes on after its
// history; no new checkpoint ends in a clear DEADLINE_EXCEEDED.
#include "evaluator/sidecar_evaluator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "data/shard.h"
#include "evaluator/test_job.h"
#include "inference/evaluate.h"
#include "testing/temp_dir.h"

namespace ringtrain::evaluator {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

// The reference: EvaluateModel on the whole of data.eval with the model's weights.
inference::EvalResult Reference(const config::JobConfig& job, nn::Model* model) {
  auto shard = data::OpenShard(job.eval_data, job.base_dir, data::ShardPolicy::kOff, 0, 1, "data.eval");
  EXPECT_TRUE(shard.ok());
  auto d = data::Materialize(*shard);
  EXPECT_TRUE(d.ok());
  auto r = inference::EvaluateModel(model, *d, job.batch_size_per_worker, job.loss, job.metrics);
  EXPECT_TRUE(r.ok());
  return *r;
}

struct Captured {  // the evaluator's lines
  std::FILE* file = std::tmpfile();
  ~Captured() { std::fclose(file); }
  std::string text() {
    std::fflush(file);
    std::rewind(file);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) out.append(buf, n);
    return out;
  }
};

class SidecarEvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nlohmann::json j = EvalTestJobJson(tmp_.path());
    j["model_checkpoint"] = {{"filepath", tmp_.path() + "/ckpt_{epoch}.safetensors"}};
    j["tensorboard_dir"] = tmp_.path() + "/tb";
    job_ = ParseJob(j);
  }
  EvaluatorOptions Options(std::FILE* out) {
    EvaluatorOptions o;
    o.num_workers = 2;
    o.timeout_s = 0.3;
    o.poll_interval_s = 0.01;
    o.out = out;
    return o;
  }
  std::string Ckpt(int e) { return tmp_.path() + "/ckpt_" + std::to_string(e) + ".safetensors"; }

  TempDir tmp_;
  config::JobConfig job_;
};

TEST_F(SidecarEvaluatorTest, EvaluatesEachCheckpointInOrderAndGoesOnAfterARestart) {
  std::vector<std::unique_ptr<nn::Model>> models;
  for (int e = 1; e <= 3; ++e) models.push_back(ScaledModel(job_, static_cast<float>(e)));
  for (int e = 1; e <= 2; ++e) WriteModelFile(*models[e - 1], Ckpt(e), e, 4 * e);

  // First run: epochs 1 and 2 exist, 3 never comes: it times out after recording both.
  {
    Captured out;
    auto ev = SidecarEvaluator::Create(job_, Options(out.file));
    ASSERT_TRUE(ev.ok()) << ev.status().ToString();
    Status s = (*ev)->Run();
    EXPECT_EQ(s.code(), Code::kDeadlineExceeded);
    EXPECT_EQ(s.subject(), Subject::kPeers);
    EXPECT_NE(s.message().find("ckpt_3.safetensors (epoch 3 of 3)"), std::string::npos) << s.message();
    ASSERT_EQ((*ev)->history().records().size(), 2u);
    const std::string lines = out.text();
    EXPECT_NE(lines.find("Evaluation of epoch 1/3 (step 4, model_checkpoint ckpt_1.safetensors) - 40 examples - loss: "),
              std::string::npos)
        << lines;
    EXPECT_NE(lines.find("Evaluation of epoch 2/3 (step 8,"), std::string::npos) << lines;
  }
  // Restarted, with epoch 3 there now: only epoch 3 is evaluated, and it is final.
  WriteModelFile(*models[2], Ckpt(3), 3, 12);
  {
    Captured out;
    auto ev = SidecarEvaluator::Create(job_, Options(out.file));
    ASSERT_TRUE(ev.ok());
    ASSERT_TRUE((*ev)->Run().ok());
    const std::string lines = out.text();
    EXPECT_EQ(lines.find("epoch 1/3"), std::string::npos) << lines;
    EXPECT_NE(lines.find("Evaluation of epoch 3/3"), std::string::npos) << lines;
  }
  auto history = EvalHistory::Open(tmp_.path() + "/history.eval.jsonl");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->records().size(), 3u);
  for (int e = 1; e <= 3; ++e) {
    const nlohmann::json& r = history->records()[e - 1];
    EXPECT_EQ(r["epoch"], e);
    EXPECT_EQ(r["step"], 4 * e);
    EXPECT_EQ(r["final"], e == 3);
    EXPECT_EQ(r["checkpoint"], Ckpt(e));
    // Exactly the numbers of an evaluation of those weights (each epoch's differ).
    inference::EvalResult ref = Reference(job_, models[e - 1].get());
    EXPECT_EQ(r["examples"], ref.examples);
    EXPECT_EQ(r["loss"].get<double>(), ref.loss) << "epoch " << e;
    EXPECT_EQ(r["accuracy"].get<double>(), ref.accuracy) << "epoch " << e;
  }
  EXPECT_NE(history->records()[0]["loss"], history->records()[2]["loss"]);
  // TensorBoard: one event file per run of the evaluator under <tensorboard_dir>/eval.
  int files = 0;
  for (const auto& f : fs::directory_iterator(tmp_.path() + "/tb/eval")) {
    files += f.path().filename().string().rfind("events.out.tfevents.", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(files, 2);

  // A third start finds the final one recorded: nothing to do.
  Captured out;
  auto ev = SidecarEvaluator::Create(job_, Options(out.file));
  ASSERT_TRUE(ev.ok());
  ASSERT_TRUE((*ev)->Run().ok());
  EXPECT_NE(out.text().find("nothing is left to evaluate"), std::string::npos);
  EXPECT_EQ(EvalHistory::Open(tmp_.path() + "/history.eval.jsonl")->records().size(), 3u);
}

TEST_F(SidecarEvaluatorTest, AJobWithoutEvalDataIsRefused) {
  nlohmann::json j = job_.raw;
  j["data"].erase("eval");
  auto ev = SidecarEvaluator::Create(ParseJob(j), Options(stdout));
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().subject(), Subject::kConfig);
  EXPECT_NE(ev.status().message().find("add data.eval"), std::string::npos);
}

}  // namespace
}  // namespace ringtrain::evaluator
