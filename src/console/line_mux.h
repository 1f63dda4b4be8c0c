// The console of `ringtrain launch`: several tasks' output streams merged onto one
// output, whole lines at a time, with at most one live progress bar kept at the bottom.
//
// Each source (a child's stdout or stderr) is fed raw bytes as they are read; every
// completed line is written at once, in the order that source produced it, prefixed
// with the source's prefix ("[worker:1] ", or none for the chief's stdout). A partial
// line waits for its end (or for Close, which ends it). A line that starts with
// train::kProgressMarker (train/progress.h: the chief's running bar under launch) is not
// a line but the bar's new text: on a terminal the bar is redrawn in place ("\r", the
// text, erase to the end of the line); other lines clear it first and redraw it after
// them, so a bar is never cut by another task's line; a plain line from the bar's own
// source (its epoch line) replaces it. Without a terminal bars are dropped and only
// plain lines, without carriage returns, are written.
//
// Threading: every method may be called from any thread; each takes one lock, and
// writes what it has under it, so lines from different threads never interleave.
// Blocking: writes to `out` (a full pipe blocks the caller). Errors: a failed write is
// dropped (the console is best-effort; the tasks' log files keep everything).
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace ringtrain::console {

class LineMux {
 public:
  // `terminal`: whether `out` is a terminal (IsTerminal(out) in production; a test
  // says what to pretend). `out` is not owned and must outlive this.
  LineMux(FILE* out, bool terminal);
  ~LineMux();  // clears the bar; never throws

  // A new source; `prefix` starts each of its lines. Returns its id.
  int AddSource(std::string prefix);
  // Bytes a source produced; writes each line they complete.
  void Feed(int source, std::string_view data);
  // The source ended: its unfinished line, if any, is written with a newline.
  void Close(int source);
  // A whole line of our own (no newline needed), unprefixed.
  void WriteLine(std::string_view line);
  // Removes the bar from the screen (before exiting).
  void ClearBar();

  bool terminal() const { return terminal_; }

 private:
  struct Source {
    std::string prefix;
    std::string partial;
  };
  void EmitLocked(int source, std::string_view line);
  void PutLocked(std::string_view text);

  std::mutex mu_;
  FILE* const out_;
  const bool terminal_;
  std::vector<Source> sources_;  // guarded by mu_
  std::string bar_;              // guarded by mu_; the bar's text, empty: none
  int bar_source_ = -1;          // guarded by mu_
  bool bar_shown_ = false;       // guarded by mu_; the bar is on the screen's last line
};

// Whether `f` is a terminal.
bool IsTerminal(FILE* f);

}  // namespace ringtrain::console
