#include "console/line_mux.h"

#include <unistd.h>

#include "train/progress.h"

namespace ringtrain::console {
namespace {

constexpr std::string_view kClearLine = "\r\x1b[K";

}  // namespace

bool IsTerminal(FILE* f) { return isatty(fileno(f)) == 1; }

LineMux::LineMux(FILE* out, bool terminal) : out_(out), terminal_(terminal) {}

LineMux::~LineMux() {
  try {
    ClearBar();
  } catch (...) {
    // A destructor never throws; the bar may stay on the screen.
  }
}

int LineMux::AddSource(std::string prefix) {
  std::lock_guard<std::mutex> lock(mu_);
  sources_.push_back({std::move(prefix), {}});
  return static_cast<int>(sources_.size()) - 1;
}

void LineMux::Feed(int source, std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  Source& s = sources_.at(static_cast<size_t>(source));
  s.partial.append(data);
  size_t start = 0, nl;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    EmitLocked(source, std::string_view(s.partial).substr(start, nl - start));
    start = nl + 1;
  }
  s.partial.erase(0, start);
  std::fflush(out_);
}

void LineMux::Close(int source) {
  std::lock_guard<std::mutex> lock(mu_);
  Source& s = sources_.at(static_cast<size_t>(source));
  if (!s.partial.empty()) EmitLocked(source, s.partial);
  s.partial.clear();
  if (bar_source_ == source) {  // a bar whose task ended is stale
    if (bar_shown_) PutLocked(kClearLine);
    bar_.clear();
    bar_source_ = -1;
    bar_shown_ = false;
  }
  std::fflush(out_);
}

void LineMux::WriteLine(std::string_view line) {
  std::lock_guard<std::mutex> lock(mu_);
  EmitLocked(-1, line);
  std::fflush(out_);
}

void LineMux::ClearBar() {
  std::lock_guard<std::mutex> lock(mu_);
  if (bar_shown_) PutLocked(kClearLine);
  bar_shown_ = false;
  bar_.clear();
  bar_source_ = -1;
  std::fflush(out_);
}

void LineMux::EmitLocked(int source, std::string_view line) {
  // A child's own carriage returns (a bar drawn for a terminal it does not have) would
  // corrupt the lines around them: keep what the last one left, as a terminal would show.
  size_t cr = line.rfind('\r');
  if (cr != std::string_view::npos) line.remove_prefix(cr + 1);
  const std::string_view marker = train::kProgressMarker;
  if (line.substr(0, marker.size()) == marker) {
    if (!terminal_) return;
    bar_.assign(line.substr(marker.size()));
    bar_source_ = source;
    PutLocked("\r");
    PutLocked(bar_);
    PutLocked("\x1b[K");
    bar_shown_ = true;
    return;
  }
  if (bar_shown_) PutLocked(kClearLine);
  bar_shown_ = false;
  if (source >= 0) PutLocked(sources_[static_cast<size_t>(source)].prefix);
  PutLocked(line);
  PutLocked("\n");
  if (source >= 0 && source == bar_source_) {  // the bar's own task moved on (its epoch line)
    bar_.clear();
    bar_source_ = -1;
  }
  if (!bar_.empty()) {
    PutLocked(bar_);
    PutLocked("\x1b[K");
    bar_shown_ = true;
  }
}

void LineMux::PutLocked(std::string_view text) { std::fwrite(text.data(), 1, text.size(), out_); }

}  // namespace ringtrain::console
