// A table of malformed input, tried as a careless or hostile user would, end
// to end on the real binary: every case gives exactly one "error:" line and the
// documented exit code (2 configuration, 3 data, 6 model file) -- never an abort, a
// signal or a hang.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

class HostileInputTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return tmp_.path() + "/" + name; }

  // Runs `args` with a one-worker TF_CONFIG and checks the outcome.
  ProcessResult Run(const std::vector<std::string>& args, int want_exit, const std::string& want_text,
                    std::map<std::string, std::string> env = {}) {
    if (!env.count("TF_CONFIG")) env["TF_CONFIG"] = LoopbackTfConfig(FreePorts(1), 0);
    Process p(RingtrainBinary(), args, env);
    ProcessResult r = p.Wait(60);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, want_exit) << r.output;
    EXPECT_EQ(Count(r.output, "error:"), 1u) << r.output;
    EXPECT_NE(r.output.find(want_text), std::string::npos) << r.output;
    return r;
  }
  ProcessResult RunJob(const nlohmann::json& job, int want_exit, const std::string& want_text) {
    WriteFile(Path("job.json"), job.dump());
    return Run({"worker", "--job", Path("job.json")}, want_exit, want_text);
  }
  ProcessResult RunJobText(const std::string& text, int want_exit, const std::string& want_text) {
    WriteFile(Path("job.json"), text);
    return Run({"worker", "--job", Path("job.json")}, want_exit, want_text);
  }

  TempDir tmp_;
};

// The job's text with `"key": old` replaced by `"key": value` (raw JSON, which
// nlohmann could not even hold: 1e400, 400 digits).
std::string Replace(const nlohmann::json& job, const std::string& old_text, const std::string& new_text) {
  std::string text = job.dump();
  const size_t at = text.find(old_text);
  EXPECT_NE(at, std::string::npos) << old_text;
  return text.replace(at, old_text.size(), new_text);
}

TEST_F(HostileInputTest, NumbersOutOfRangeExit2) {
  const nlohmann::json job = SmallSyntheticJob(tmp_.path());
  RunJobText(Replace(job, "\"learning_rate\":0.01", "\"learning_rate\":1e400"), 2, "a number is out of range");
  RunJobText(Replace(job, "\"learning_rate\":0.01", "\"learning_rate\":-1e400"), 2, "a number is out of range");
  RunJobText(Replace(job, "\"seed\":5", "\"seed\":" + std::string(400, '9')), 2, "a number is out of range");
  RunJobText(Replace(job, "\"batch_size_per_worker\":16", "\"batch_size_per_worker\":1e30"), 2,
             "'batch_size_per_worker' must be a positive integer");
  RunJobText(Replace(job, "\"epochs\":2", "\"epochs\":99999999999999999999"), 2, "'epochs' must be a positive integer");
  RunJobText(Replace(job, "\"learning_rate\":0.01", "\"learning_rate\":1e300"), 2,
             "'learning_rate' must be at most 3.4e38");
}

TEST_F(HostileInputTest, ABatchThatCannotFitExits2NamingTheBoundAndTheField) {
  nlohmann::json job = SmallSyntheticJob(tmp_.path());
  job["model"]["layers"] = nlohmann::json::parse(R"([{"type": "flatten"}, {"type": "dense", "units": 64},
                                                     {"type": "dense", "units": 4}])");
  job["batch_size_per_worker"] = 1000000000;
  ProcessResult r = RunJob(job, 2, "batch_size_per_worker 1000000000 would need about");
  EXPECT_NE(r.output.find("for activations"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(RINGTRAIN_MAX_MEMORY_MB, default: this machine's physical memory); lower "
                          "batch_size_per_worker"),
            std::string::npos) << r.output;
  // With a convolution, the kernels' 32-bit row count is what a billion examples break first.
  job = SmallSyntheticJob(tmp_.path());
  job["batch_size_per_worker"] = 1000000000;
  RunJob(job, 2, "exceeds the 2^31 - 1 rows a convolution can process at once");
}

TEST_F(HostileInputTest, AModelThatCannotFitExits2) {
  nlohmann::json job = SmallSyntheticJob(tmp_.path());
  job["model"]["layers"][4]["units"] = 1000000000;
  RunJob(job, 2, "'units' must be a positive integer (at most 16777216)");
  job["model"]["layers"][4]["units"] = 1000000;
  WriteFile(Path("job.json"), job.dump());
  Run({"worker", "--job", Path("job.json")}, 2, "parameters (the most in model.layers[4] (dense)) would need about",
      {{"RINGTRAIN_MAX_MEMORY_MB", "1024"}});
}

TEST_F(HostileInputTest, SpecialFilesAsTheJobExit2) {
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  Run({"worker", "--job", "/dev/zero"}, 2, "'/dev/zero' is a character device, not a regular file");
  Run({"worker", "--job", Path("fifo")}, 2, "is a FIFO (named pipe), not a regular file");
  Run({"worker", "--job", tmp_.path()}, 2, "is a directory, not a regular file");
}

TEST_F(HostileInputTest, SpecialFilesAsTfConfigExit2) {
  WriteFile(Path("job.json"), SmallSyntheticJob(tmp_.path()).dump());
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  Run({"worker", "--job", Path("job.json"), "--tf_config", Path("fifo")}, 2, "is a FIFO (named pipe)");
  Run({"worker", "--job", Path("job.json"), "--tf_config", tmp_.path()}, 2, "is a directory");
  Run({"worker", "--job", Path("job.json"), "--tf_config", "/dev/urandom"}, 2, "is a character device");
}

nlohmann::json MnistJob(const std::string& dir, const std::string& images, const std::string& labels) {
  nlohmann::json job = SmallSyntheticJob(dir);
  job["model"]["input_shape"] = {28, 28};
  job["model"]["layers"][0]["target_shape"] = {28, 28, 1};
  job["data"]["train"] = {{"format", "mnist_idx"}, {"images", images}, {"labels", labels}};
  job["data"].erase("eval");
  return job;
}

std::string BigEndian(std::initializer_list<uint32_t> words) {
  std::string s;
  for (uint32_t w : words) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((w >> shift) & 0xff));
  }
  return s;
}

TEST_F(HostileInputTest, DataFilesThatAreNotWhatTheyClaimExit3) {
  ::mkdir(Path("images-dir").c_str(), 0700);
  WriteFile(Path("labels"), BigEndian({2049, 3}) + std::string("\1\2\3"));
  RunJob(MnistJob(tmp_.path(), "images-dir", "labels"), 3, "is a directory, not a regular file");
  // A header claiming four billion images in a file of a hundred bytes.
  WriteFile(Path("images"), BigEndian({2051, 4000000000u, 28, 28}) + std::string(100, 'x'));
  RunJob(MnistJob(tmp_.path(), "images", "labels"), 3, "declares 3136000000000 bytes of data");
  RunJob(MnistJob(tmp_.path(), "/dev/zero", "labels"), 3, "is a character device");
}

// A safetensors file with SmallSyntheticJob's tensors, all holding `value`.
std::string ModelFile(float value) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> tensors = {
      {"conv2d/bias", {4}},   {"conv2d/kernel", {3, 3, 1, 4}}, {"dense/bias", {16}},
      {"dense/kernel", {100, 16}}, {"dense_1/bias", {4}},      {"dense_1/kernel", {16, 4}}};
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, shape] : tensors) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + 4 * n}}};
    for (size_t i = 0; i < n; ++i) data.append(reinterpret_cast<const char*>(&value), 4);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((text.size() >> (8 * i)) & 0xff));
  return out + text + data;
}

TEST_F(HostileInputTest, EvaluateRefusesModelFilesThatAreNotModelsExit6) {
  WriteFile(Path("job.json"), SmallSyntheticJob(tmp_.path()).dump());
  const std::string job = Path("job.json");
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  Run({"evaluate", "--job", job, "--model", "/dev/zero"}, 6, "'/dev/zero' is a character device");
  Run({"evaluate", "--job", job, "--model", Path("fifo")}, 6, "is a FIFO (named pipe)");
  Run({"evaluate", "--job", job, "--model", tmp_.path()}, 6, "is a directory");
  Run({"predict", "--job", job, "--model", "/dev/urandom"}, 6, "is a character device");
  // The model file the job's model needs, but NaN: refused, not "loss: nan".
  WriteFile(Path("nan.safetensors"), ModelFile(std::numeric_limits<float>::quiet_NaN()));
  Run({"evaluate", "--job", job, "--model", Path("nan.safetensors")}, 6,
      "tensor 'conv2d/bias' holds NaN at index 0");
  WriteFile(Path("inf.safetensors"), ModelFile(std::numeric_limits<float>::infinity()));
  Run({"predict", "--job", job, "--model", Path("inf.safetensors")}, 6, "holds +infinity at index 0");
  // The same file with finite weights evaluates: the refusal is about the values.
  WriteFile(Path("ok.safetensors"), ModelFile(0.01f));
  Process p(RingtrainBinary(), {"evaluate", "--job", job, "--model", Path("ok.safetensors")});
  ProcessResult r = p.Wait(60);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace ringtrain::testing
