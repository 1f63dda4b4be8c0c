// Keras-like progress output for one worker:
//   Epoch 2/3 - 70/70 - 3.1s - loss: 2.2172 - accuracy: 0.4157 - 2873 images/s
// with each metric as " - <name>: <value>" after the loss (Keras' history keys), when
// set " - val_loss: 0.0899 - val_accuracy: 0.9735" after them, and
// " - lr: 1.0000e-04" (learning_rate > 0) before the images/s.
// With a terminal, a live bar is redrawn in place during the epoch; otherwise only
// the finished epoch's line is printed (logs and the launcher's pipes stay clean).
// Under `ringtrain launch` on a terminal the chief streams its bar instead (mode
// "stream": each redraw is one line starting with kProgressMarker) and launch's
// console (console/line_mux.h) draws it.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace ringtrain::train {

// Starts a line that carries the bar's new text rather than a line to print.
inline constexpr char kProgressMarker[] = "ringtrain-progress: ";

// A metric's history key and value: {"accuracy", 0.91}.
using NamedValues = std::vector<std::pair<std::string, double>>;

struct EpochLine {
  int epoch = 0, epochs = 0, step = 0, steps = 0;
  double seconds = 0, loss = 0, images_per_sec = 0, learning_rate = 0;
  NamedValues metrics;      // in the job's "metrics" order
  bool has_val = false;
  double val_loss = 0;
  NamedValues val_metrics;  // the same names, shown with "val_"
};

std::string FormatEpochLine(const EpochLine& line);

class ProgressPrinter {
 public:
  // mode: "auto" (bar when `out` is a terminal), "bar", "lines", or "stream" (the bar
  // as marked lines for launch, at most 5 a second).
  ProgressPrinter(FILE* out, const std::string& mode);
  // During an epoch (running local values); draws only in bar mode, at most ~10 times a second.
  void Update(const EpochLine& line);
  // The epoch's final line (global values).
  void Finish(const EpochLine& line);
  // Whether Update draws anything (a bar), so callers can skip preparing its values.
  bool drawing() const { return bar_; }

 private:
  FILE* out_;
  bool bar_;
  bool stream_;
  double last_draw_ = -1;
};

}  // namespace ringtrain::train
