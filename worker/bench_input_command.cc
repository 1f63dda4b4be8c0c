// `ringtrain bench input [--images 2000] [--dir D] [--mnist DIR] [--batch 32] [--seconds 3]
// [--python /usr/bin/python3] [--scripts DIR] [--timeout_s 600]`: generates the JPEG class
// folder and the TFRecord file once (tests/bench/make_jpeg_folder.py, deploy/mnist_to_tfrecord.py),
// then runs ringtrain's pipeline and PyTorch's DataLoader (tests/bench/torch_input.py)
// over the same folder side by side, and the TFRecord reader on one thread
// (src/bench/input_bench.h). Without --dir the files go to a temporary directory that is
// removed at the end. Exit codes: 2 bad flags or a generator that cannot run, 3 bad data.
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/input_bench.h"
#include "bench/subprocess.h"
#include "commands.h"
#include "common/exit_policy.h"
#include "flags.h"

#ifndef RINGTRAIN_SOURCE_DIR
#define RINGTRAIN_SOURCE_DIR "."
#endif

namespace ringtrain::cli {
namespace {

namespace fs = std::filesystem;

// Removes a temporary directory on every way out.
struct TempTree {
  std::string path;
  ~TempTree() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

StatusOr<std::string> MakeTempDir() {
  const char* base = ::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ringtrain_bench_input.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return ErrnoError("creating a directory from " + tmpl, errno);
  return std::string(buf.data());
}

// MNIST's t10k files: --mnist, else the checkout's data/mnist or ../shared/data/mnist.
std::string FindMnist(const Flags& flags) {
  if (flags.has("mnist")) return flags.get("mnist");
  const fs::path src = RINGTRAIN_SOURCE_DIR;
  for (const fs::path& d : {src / "data/mnist", src / "../shared/data/mnist"}) {
    std::error_code ec;
    if (fs::exists(d / "t10k-images-idx3-ubyte.gz", ec)) return d.lexically_normal().string();
  }
  return (src / "data/mnist").string();
}

// Runs a generator script; its failure is the set-up's fault (exit 2), with its last words.
Status Generate(const std::vector<std::string>& argv, double timeout_s) {
  RT_ASSIGN_OR_RETURN(bench::ProgramResult run, bench::RunProgram(argv, timeout_s));
  if (run.exit_code != 0) {
    std::string tail = run.output;
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    if (tail.rfind('\n') != std::string::npos) tail = tail.substr(tail.rfind('\n') + 1);
    return FailedPreconditionError(argv[1] + " failed (exit " + std::to_string(run.exit_code) + "): " + tail)
        .About(Subject::kConfig);
  }
  return Status::Ok();
}

}  // namespace

int RunBenchInput(const std::vector<std::string>& args) {
  auto flags = Flags::Parse(args, {"images", "dir", "mnist", "batch", "seconds", "python", "scripts", "timeout_s"}, {});
  if (!flags.ok()) return Fail(flags.status().About(Subject::kConfig));
  auto images = flags->get_int("images", 2000, 20, 10000);
  // Batch 32 as the PyTorch peer's DataLoader; a smaller folder (a smoke run) gets two batches.
  auto batch = flags->get_int("batch", images.ok() ? std::min(32, *images / 2) : 32, 1, 4096);
  auto seconds = flags->get_int("seconds", 3, 1, 600);
  auto timeout_s = flags->get_int("timeout_s", 600, 10, 86400);
  for (const Status& s : {images.status(), batch.status(), seconds.status(), timeout_s.status()}) {
    if (!s.ok()) return Fail(s.About(Subject::kConfig));
  }
  if (*images < 2 * *batch) {
    return Fail(BadFlag("--images must be at least two batches (2 x --batch = " + std::to_string(2 * *batch) + ")"));
  }
  const std::string python = flags->get("python", "/usr/bin/python3");
  const std::string scripts = flags->get("scripts", std::string(RINGTRAIN_SOURCE_DIR) + "/tests/bench");
  const std::string mnist = FindMnist(*flags);

  TempTree temp;
  std::string dir = flags->get("dir");
  if (dir.empty()) {
    auto made = MakeTempDir();
    if (!made.ok()) return Fail(made.status().About(Subject::kStorage));
    dir = temp.path = *made;
  }
  const std::string folder = (fs::path(dir) / ("jpeg_" + std::to_string(*images))).string();
  const std::string tfrecord_prefix = (fs::path(dir) / "mnist_t10k_raw").string();
  const std::string tfrecord = tfrecord_prefix + "-00000-of-00001.tfrecord";  // mnist_to_tfrecord.py's name
  std::fprintf(stdout, "# generating %s (once) and %s from %s ...\n", folder.c_str(), tfrecord.c_str(), mnist.c_str());
  std::fflush(stdout);
  Status made = Generate({python, scripts + "/make_jpeg_folder.py", "--mnist", mnist, "--out", folder, "--images",
                          std::to_string(*images)},
                         *timeout_s);
  if (!made.ok()) return Fail(made);

  bench::InputBenchReport report;
  report.folder = folder;
  report.folder_images = *images;
  report.batch = *batch;
  for (int threads : {1, 2}) {
    auto rate = bench::MeasureJpegFolder(folder, threads, *batch);
    if (!rate.ok()) {
      const Status& s = rate.status();
      return Fail(s.About(s.code() == Code::kInvalidArgument ? Subject::kConfig : Subject::kData));
    }
    report.ringtrain.push_back(*rate);
    report.torch.push_back(
        bench::RunTorchPeer(python, scripts + "/torch_input.py", folder, threads, *batch, *timeout_s));
  }

  Status wrote = Generate({python, scripts + "/../../deploy/mnist_to_tfrecord.py", mnist + "/t10k-images-idx3-ubyte.gz",
                           mnist + "/t10k-labels-idx1-ubyte.gz", tfrecord_prefix, "--image_key", "image/encoded"},
                          *timeout_s);
  if (!wrote.ok()) {
    report.tfrecord_error = wrote.message();
  } else {
    auto rate = bench::MeasureTfRecord(tfrecord, *seconds);
    if (rate.ok()) {
      report.tfrecord = *rate;
    } else {
      report.tfrecord_error = rate.status().message();
    }
  }
  std::fputs(bench::FormatInputBench(report).c_str(), stdout);
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace ringtrain::cli
