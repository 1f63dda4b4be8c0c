// `ringtrain evaluate` and `ringtrain predict` on a model that a real one-worker
// training run saved: the same numbers as the run's own evaluation, consistent
// predictions, and one clear line with the documented exit code for each bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

constexpr int kEvalExamples = 256;  // SmallSyntheticJob's data.eval
constexpr int kTrainExamples = 1024;
constexpr int kClasses = 4;

// Only the commands' stdout: the log lines (stderr) are turned off.
ProcessResult RunCommand(const std::vector<std::string>& args) {
  Process p(RingtrainBinary(), args, {{"RINGTRAIN_LOG_LEVEL", "ERROR"}});
  return p.Wait(120);
}


// Trains SmallSyntheticJob once, on one worker (its shard is the whole split), and
// keeps the run's output and its saved model for every test of the suite.
class EvaluateCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    WriteFile(Job(), SmallSyntheticJob(*dir_).dump());
    Process p(RingtrainBinary(), {"worker", "--job", Job()},
              {{"TF_CONFIG", LoopbackTfConfig(FreePorts(1), 0)},
               {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
               {"RINGTRAIN_PROGRESS", "lines"},
               {"RINGTRAIN_NUM_THREADS", "1"}});
    train_ = new ProcessResult(p.Wait(180));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
    delete train_;
  }
  void SetUp() override {
    ASSERT_FALSE(train_->timed_out) << train_->output;
    ASSERT_EQ(train_->exit_code, 0) << train_->output;
  }
  static std::string Job() { return *dir_ + "/job.json"; }
  static std::string Model() { return *dir_ + "/model.safetensors"; }

  static std::string* dir_;
  static ProcessResult* train_;
};
std::string* EvaluateCommandTest::dir_ = nullptr;
ProcessResult* EvaluateCommandTest::train_ = nullptr;

TEST_F(EvaluateCommandTest, PrintsTheTrainingRunsOwnEvaluation) {
  std::smatch m;
  std::regex line_re(R"(Evaluation - \d+ examples - loss: [0-9.]+ - accuracy: [0-9.]+)");
  ASSERT_TRUE(std::regex_search(train_->output, m, line_re)) << train_->output;
  const std::string trained = m.str();
  ASSERT_NE(trained.find("256 examples"), std::string::npos) << trained;

  ProcessResult r = RunCommand({"evaluate", "--job", Job(), "--model", Model()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, trained + "\n");

  // --json: full precision, against the history file's record of the same evaluation
  // (which the trainer reduces through float sums, hence the tolerance).
  r = RunCommand({"evaluate", "--job", Job(), "--model", Model(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["examples"], kEvalExamples);
  EXPECT_EQ(j["data"], "eval");
  EXPECT_EQ(j["model"], Model());
  std::string history = ReadFileOrEmpty(*dir_ + "/history.jsonl");
  nlohmann::json evaluation = nlohmann::json::parse(Lines(history).back())["evaluation"];
  EXPECT_NEAR(j["loss"].get<double>(), evaluation["loss"].get<double>(), 1e-6);
  EXPECT_NEAR(j["accuracy"].get<double>(), evaluation["accuracy"].get<double>(), 1e-6);
}

TEST_F(EvaluateCommandTest, TrainSplitAndBatchSize) {
  ProcessResult a = RunCommand({"evaluate", "--job", Job(), "--model", Model(), "--data", "train", "--json"});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  nlohmann::json ja = nlohmann::json::parse(a.output);
  EXPECT_EQ(ja["examples"], kTrainExamples);
  EXPECT_EQ(ja["data"], "train");
  // Another batch size changes only the grouping: the same metrics to rounding.
  ProcessResult b = RunCommand({"evaluate", "--job", Job(), "--model", Model(), "--data", "train", "--batch_size", "7",
                         "--json"});
  ASSERT_EQ(b.exit_code, 0) << b.output;
  nlohmann::json jb = nlohmann::json::parse(b.output);
  EXPECT_NEAR(jb["loss"].get<double>(), ja["loss"].get<double>(), 1e-5);
  EXPECT_NEAR(jb["accuracy"].get<double>(), ja["accuracy"].get<double>(), 2.0 / kTrainExamples);
}

TEST_F(EvaluateCommandTest, PredictLinesAgreeWithJsonAndWithEvaluate) {
  ProcessResult text = RunCommand({"predict", "--job", Job(), "--model", Model(), "--first", "10", "--count", "20"});
  ASSERT_EQ(text.exit_code, 0) << text.output;
  std::vector<std::string> lines = Lines(text.output);
  ASSERT_EQ(lines.size(), 20u) << text.output;
  std::regex re(R"((\d+) class=(\d+) probability=([0-9.]+) label=(\d+))");
  std::vector<int> text_classes;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, re)) << lines[i];
    EXPECT_EQ(std::stoi(m[1]), 10 + static_cast<int>(i));
    int c = std::stoi(m[2]);
    EXPECT_GE(c, 0);
    EXPECT_LT(c, kClasses);
    // The winner of 4 classes has at least a quarter of the mass.
    EXPECT_GE(std::stod(m[3]), 0.25 - 1e-6);
    EXPECT_LE(std::stod(m[3]), 1.0);
    EXPECT_LT(std::stoi(m[4]), kClasses);
    text_classes.push_back(c);
  }

  // The whole split as JSON: classes are the argmax of the probabilities, the text
  // agrees, and the fraction right is evaluate's accuracy exactly (same batches).
  ProcessResult js = RunCommand({"predict", "--job", Job(), "--model", Model(), "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.output;
  nlohmann::json all = nlohmann::json::parse(js.output);
  ASSERT_EQ(all.size(), static_cast<size_t>(kEvalExamples));
  int correct = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json& p = all[i];
    ASSERT_EQ(p["index"], i);
    std::vector<double> probs = p["probabilities"].get<std::vector<double>>();
    ASSERT_EQ(probs.size(), static_cast<size_t>(kClasses));
    const int argmax = static_cast<int>(std::max_element(probs.begin(), probs.end()) - probs.begin());
    EXPECT_EQ(p["class"], argmax);
    EXPECT_EQ(p["probability"].get<double>(), probs[static_cast<size_t>(argmax)]);
    double sum = 0;
    for (double q : probs) sum += q;
    EXPECT_NEAR(sum, 1.0, 1e-12);
    if (i >= 10 && i < 30) {
      EXPECT_EQ(p["class"], text_classes[i - 10]) << i;
    }
    correct += p["class"] == p["label"] ? 1 : 0;
  }
  ProcessResult eval = RunCommand({"evaluate", "--job", Job(), "--model", Model(), "--json"});
  ASSERT_EQ(eval.exit_code, 0) << eval.output;
  EXPECT_EQ(static_cast<double>(correct) / kEvalExamples, nlohmann::json::parse(eval.output)["accuracy"].get<double>());
}

TEST_F(EvaluateCommandTest, MissingOrCorruptModelFileExits6) {
  ProcessResult r = RunCommand({"evaluate", "--job", Job(), "--model", *dir_ + "/absent.safetensors"});
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(Lines(r.output).size(), 1u) << r.output;
  EXPECT_NE(r.output.find("absent.safetensors' does not exist"), std::string::npos) << r.output;

  WriteFile(*dir_ + "/corrupt.safetensors", "not a safetensors file");
  r = RunCommand({"predict", "--job", Job(), "--model", *dir_ + "/corrupt.safetensors"});
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(Lines(r.output).size(), 1u) << r.output;
  EXPECT_NE(r.output.find("corrupt.safetensors"), std::string::npos) << r.output;
}

TEST_F(EvaluateCommandTest, ModelThatDoesNotFitTheJobExits6NamingTheTensor) {
  nlohmann::json job = SmallSyntheticJob(*dir_);
  job["model"]["layers"][4]["units"] = 8;  // dense: 16 units when trained
  WriteFile(*dir_ + "/narrow.json", job.dump());
  ProcessResult r = RunCommand({"evaluate", "--job", *dir_ + "/narrow.json", "--model", Model()});
  EXPECT_EQ(r.exit_code, 6) << r.output;
  EXPECT_EQ(Lines(r.output).size(), 1u) << r.output;
  EXPECT_NE(r.output.find("the job's model and " + Model() + " disagree"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tensor 'dense/kernel' has shape [100, 16] in the file but [100, 8] in the model"),
            std::string::npos)
      << r.output;
}

TEST_F(EvaluateCommandTest, BadFlagsExit2) {
  const std::vector<std::vector<std::string>> cases = {
      // (no --model takes the job's save_model: worker_cli_test)
      {"evaluate", "--model", Model()},                                      // no --job
      {"evaluate", "--job", Job(), "--model", Model(), "--data", "test"},    // no such split
      {"evaluate", "--job", Job(), "--model", Model(), "--batch_size", "0"},
      {"evaluate", "--job", Job(), "--model", Model(), "--first", "3"},      // predict's flag
      {"predict", "--job", Job(), "--model", Model(), "--first", "256"},     // past the end
      {"predict", "--job", Job(), "--model", Model(), "--first", "250", "--count", "7"},
      {"predict", "--job", *dir_ + "/absent.json", "--model", Model()},
  };
  for (const auto& args : cases) {
    ProcessResult r = RunCommand(args);
    std::string what;
    for (const auto& a : args) what += a + " ";
    EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.output;
    EXPECT_EQ(Lines(r.output).size(), 1u) << what << "\n" << r.output;
  }
}

}  // namespace
}  // namespace ringtrain::testing
