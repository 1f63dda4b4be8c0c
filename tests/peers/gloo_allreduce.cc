// Usage: build/peers/gloo_allreduce [procs=2] [min_bytes=4] [max_bytes=67108864] [iters=20] [warmup=5]
// (Debian: apt-get install libgloo-dev; built by tests/peers/build_peers.sh)
// Not part of the test suite: the Gloo peer of `ringtrain bench allreduce`. Forks N
// processes that rendezvous through Gloo's FileStore and connect with its TCP transport on
// 127.0.0.1, then run gloo::AllreduceRingChunked (float32 sum) over the bench's size
// schedule (x4 from min to max). Each op is timed alone (steady_clock, no barrier); rank 0
// prints the median per size in the bench's columns. Every result is checked.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

namespace {

int Run(int rank, int n, const std::string& dir, size_t min_bytes, size_t max_bytes, int iters, int warmup) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, n);
  context->setTimeout(std::chrono::seconds(60));
  context->connectFullMesh(store, device);
  std::vector<float> buf(max_bytes / sizeof(float));
  const float expected = static_cast<float>(n * (n + 1) / 2);
  if (rank == 0) {
    std::printf("# Gloo AllreduceRingChunked, TCP transport: %d processes, float32 sum, %d timed + %d warm-up ops "
                "per size, median of rank 0's per-op times\n",
                n, iters, warmup);
    std::printf("#%11s  %12s  %12s  %12s\n", "bytes", "time_us", "algbw_GBps", "busbw_GBps");
    std::fflush(stdout);
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    gloo::AllreduceRingChunked<float> op(context, {buf.data()}, static_cast<int>(count));
    std::vector<double> times;
    for (int it = 0; it < warmup + iters; ++it) {
      std::fill(buf.begin(), buf.begin() + static_cast<long>(count), static_cast<float>(rank + 1));
      auto t0 = std::chrono::steady_clock::now();
      op.run();
      auto t1 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < count; ++i) {
        if (buf[i] != expected) {
          std::fprintf(stderr, "gloo: wrong result at %zu bytes: element %zu is %g, expected %g\n", bytes, i,
                       buf[i], expected);
          return 1;
        }
      }
      if (it >= warmup) times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(times.begin(), times.end());
    size_t m = times.size() / 2;
    double us = times.size() % 2 ? times[m] : (times[m - 1] + times[m]) / 2;
    double algbw = static_cast<double>(bytes) / us / 1e3;
    if (rank == 0) {
      std::printf("%12zu  %12.2f  %12.3f  %12.3f\n", bytes, us, algbw, algbw * 2.0 * (n - 1) / n);
      std::fflush(stdout);
    }
    if (bytes > max_bytes / 4) break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 2;
  size_t min_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4;
  size_t max_bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 64 << 20;
  int iters = argc > 4 ? std::atoi(argv[4]) : 20;
  int warmup = argc > 5 ? std::atoi(argv[5]) : 5;
  if (n < 1 || min_bytes < 4 || min_bytes % 4 || max_bytes < min_bytes || iters < 1 || warmup < 0) {
    std::fprintf(stderr, "usage: gloo_allreduce [procs] [min_bytes] [max_bytes] [iters] [warmup]\n");
    return 2;
  }
  char dir[] = "/tmp/gloo_allreduce.XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = 1;
      try {
        code = Run(r, n, dir, min_bytes, max_bytes, iters, warmup);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  std::string cleanup = std::string("rm -rf ") + dir;
  if (std::system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir);
  return failed;
}
