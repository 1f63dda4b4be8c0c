// The MNIST bar: deploy/jobs/mnist_residual.json (BatchNormalization, Dropout,
// a residual block) as shipped, on 2 workers, reaches at least 0.985 evaluation
// accuracy on examples 8000..9999 of the MNIST test set. Reads ../shared/data/mnist
// beside the checkout, else data/mnist in it (deploy/get_mnist.sh); skipped without
// either.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "integration/process.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;

std::string MnistDir() {
  for (const std::string& d : {SourceDir() + "/../shared/data/mnist", SourceDir() + "/data/mnist"}) {
    if (fs::exists(d + "/t10k-images-idx3-ubyte.gz") && fs::exists(d + "/t10k-labels-idx1-ubyte.gz")) return d;
  }
  return "";
}

// "[worker:1] ... final weights fingerprint: 0123..." -> {"worker:1": "0123..."}
std::map<std::string, std::string> Fingerprints(const std::string& output) {
  std::map<std::string, std::string> out;
  std::regex re(R"(\[(worker:\d+)\].*final weights fingerprint: ([0-9a-f]{16}))");
  for (std::sregex_iterator it(output.begin(), output.end(), re), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

TEST(MnistResidualTest, TwoWorkersReach985EvaluationAccuracy) {
  const std::string mnist = MnistDir();
  if (mnist.empty()) GTEST_SKIP() << "no MNIST test set in ../shared/data/mnist or data/mnist (deploy/get_mnist.sh)";
  TempDir tmp;
  const std::string& dir = tmp.path();
  // The shipped job as it is, with the data and outputs moved.
  auto job = nlohmann::json::parse(ReadFileOrEmpty(SourceDir() + "/deploy/jobs/mnist_residual.json"));
  for (const char* split : {"train", "eval"}) {
    for (const char* f : {"images", "labels"}) {
      const std::string rel = job["data"][split][f];
      job["data"][split][f] = mnist + "/" + fs::path(rel).filename().string();
    }
  }
  job["save_model"] = dir + "/model.safetensors";
  job["history_file"] = dir + "/history.jsonl";
  WriteFile(dir + "/job.json", job.dump());

  Process p(RingtrainBinary(), {"launch", "--output", "all", "--workers", "2", "--job", dir + "/job.json"},
            {{"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"}, {"RINGTRAIN_NUM_THREADS", "1"}});
  ProcessResult r = p.Wait(600);
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto fp = Fingerprints(r.output);
  ASSERT_EQ(fp.size(), 2u) << r.output;
  EXPECT_EQ(fp["worker:0"], fp["worker:1"]);

  const int epochs = job["epochs"];
  auto history = ReadJsonLines(dir + "/history.jsonl");
  ASSERT_EQ(history.size(), static_cast<size_t>(epochs) + 1) << r.output;
  ASSERT_TRUE(history.back().contains("evaluation")) << history.back().dump();
  const auto& eval = history.back()["evaluation"];
  EXPECT_GE(eval["accuracy"].get<double>(), 0.985) << eval.dump();
  // The chief's printed evaluation is the history's.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\[worker:0\] Evaluation - 2000 examples - .*accuracy: ([0-9.]+))")))
      << r.output;
  EXPECT_NEAR(std::stod(m[1]), eval["accuracy"].get<double>(), 1e-4);
}

}  // namespace
}  // namespace ringtrain::testing
