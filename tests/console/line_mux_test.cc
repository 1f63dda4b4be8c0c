// The launch console's multiplexer: whole lines, each source's order kept, prefixes,
// and a progress bar that other lines never cut (a pretended terminal), or no bar and
// no carriage return at all (no terminal).
#include "console/line_mux.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "train/progress.h"

namespace ringtrain::console {
namespace {

// A FILE* whose bytes the test reads back.
class Captured {
 public:
  Captured() : f_(open_memstream(&buf_, &size_)) {}
  ~Captured() {
    std::fclose(f_);
    std::free(buf_);
  }
  FILE* file() { return f_; }
  std::string text() {
    std::fflush(f_);
    return std::string(buf_, size_);
  }

 private:
  char* buf_ = nullptr;
  size_t size_ = 0;
  FILE* f_;
};

const std::string kBar = train::kProgressMarker;

TEST(LineMux, WritesWholeLinesWithPrefixesInEachSourcesOrder) {
  Captured out;
  LineMux mux(out.file(), /*terminal=*/false);
  int chief = mux.AddSource("");
  int w1 = mux.AddSource("[worker:1] ");
  mux.Feed(chief, "Epoch 1/2 - 4");           // half a line waits
  mux.Feed(w1, "W1124 lost a peer\nsecond ");  // worker 1's first line goes out before the chief's
  mux.Feed(chief, "0/40\nEpoch 2/2\n");
  mux.Feed(w1, "half\n");
  mux.Feed(w1, "no newline at the end");
  mux.Close(w1);
  mux.WriteLine("launch: done");
  EXPECT_EQ(out.text(),
            "[worker:1] W1124 lost a peer\n"
            "Epoch 1/2 - 40/40\n"
            "Epoch 2/2\n"
            "[worker:1] second half\n"
            "[worker:1] no newline at the end\n"
            "launch: done\n");
}

TEST(LineMux, WithoutATerminalDropsTheBarAndEveryCarriageReturn) {
  Captured out;
  LineMux mux(out.file(), /*terminal=*/false);
  int chief = mux.AddSource("");
  mux.Feed(chief, kBar + "Epoch 1/1 3/40 [==>...] - loss: 2.3\n");
  mux.Feed(chief, "\rEpoch 1/1 5/40 [===>..] - loss: 2.1\x1b[K\rEpoch 1/1 - 40/40 - loss: 0.5\n");
  mux.ClearBar();
  EXPECT_EQ(out.text(), "Epoch 1/1 - 40/40 - loss: 0.5\n");
  EXPECT_EQ(out.text().find('\r'), std::string::npos);
}

TEST(LineMux, OnATerminalOtherLinesClearTheBarAndRedrawIt) {
  Captured out;
  LineMux mux(out.file(), /*terminal=*/true);
  int chief = mux.AddSource("");
  int w1 = mux.AddSource("[worker:1] ");
  mux.Feed(chief, kBar + "Epoch 1/1 3/40 [=>..] - loss: 2.3000\n");
  mux.Feed(chief, kBar + "Epoch 1/1 9/40 [==>.] - loss: 1.9000\n");
  mux.Feed(w1, "W1124 slow\n");
  mux.Feed(chief, "Epoch 1/1 - 40/40 - loss: 0.5000\n");  // replaces the bar
  mux.Feed(w1, "W1124 after\n");                          // no bar left to redraw
  EXPECT_EQ(out.text(),
            "\rEpoch 1/1 3/40 [=>..] - loss: 2.3000\x1b[K"
            "\rEpoch 1/1 9/40 [==>.] - loss: 1.9000\x1b[K"
            "\r\x1b[K[worker:1] W1124 slow\n"
            "Epoch 1/1 9/40 [==>.] - loss: 1.9000\x1b[K"
            "\r\x1b[KEpoch 1/1 - 40/40 - loss: 0.5000\n"
            "[worker:1] W1124 after\n");
}

TEST(LineMux, ABarWhoseSourceEndsIsCleared) {
  Captured out;
  LineMux mux(out.file(), /*terminal=*/true);
  int chief = mux.AddSource("");
  mux.Feed(chief, kBar + "Epoch 1/3 2/40\n");
  mux.Close(chief);
  mux.WriteLine("launch: worker:0 exited with code 137");
  EXPECT_EQ(out.text(), "\rEpoch 1/3 2/40\x1b[K\r\x1b[Klaunch: worker:0 exited with code 137\n");
}

// Many threads feeding many small pieces: every line comes out whole, and each
// source's lines in its own order.
TEST(LineMux, LinesFromThreadsNeverInterleave) {
  Captured out;
  {
    LineMux mux(out.file(), /*terminal=*/true);
    constexpr int kSources = 4, kLines = 200;
    std::vector<int> ids;
    for (int s = 0; s < kSources; ++s) ids.push_back(mux.AddSource("[task:" + std::to_string(s) + "] "));
    std::vector<std::thread> threads;
    for (int s = 0; s < kSources; ++s) {
      threads.emplace_back([&mux, &ids, s] {
        for (int i = 0; i < kLines; ++i) {
          std::string line = "line " + std::to_string(i) + " of source " + std::to_string(s) + "\n";
          for (size_t at = 0; at < line.size(); at += 3) mux.Feed(ids[s], line.substr(at, 3));
          if (s == 0 && i % 10 == 0) mux.Feed(ids[s], kBar + "bar " + std::to_string(i) + "\n");
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  std::string text = out.text();
  std::vector<int> next(4, 0);
  size_t start = 0, nl;
  int lines = 0;
  while ((nl = text.find('\n', start)) != std::string::npos) {
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    // A cleared bar ("\r...\x1b[K") may precede the line; what the line says comes after the last erase.
    size_t erase = line.rfind("\x1b[K");
    if (erase != std::string::npos) line = line.substr(erase + 3);
    int s = -1, i = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "[task:%d] line %d of source", &s, &i), 2) << line;
    ASSERT_EQ(line, "[task:" + std::to_string(s) + "] line " + std::to_string(i) + " of source " + std::to_string(s));
    EXPECT_EQ(i, next[s]++) << "source " << s;
    ++lines;
  }
  EXPECT_EQ(lines, 4 * 200);
}

}  // namespace
}  // namespace ringtrain::console
