#include "train/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>

namespace ringtrain::train {
namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


std::string Metrics(const NamedValues& metrics, const char* prefix) {
  std::string s;
  for (const auto& [name, value] : metrics) s += std::string(" - ") + prefix + name + ": " + Fixed(value, 4);
  return s;
}

}  // namespace

std::string FormatEpochLine(const EpochLine& l) {
  std::string s = "Epoch " + std::to_string(l.epoch) + "/" + std::to_string(l.epochs) + " - " +
                  std::to_string(l.step) + "/" + std::to_string(l.steps) + " - " + Fixed(l.seconds, 1) +
                  "s - loss: " + Fixed(l.loss, 4) + Metrics(l.metrics, "");
  if (l.has_val) s += " - val_loss: " + Fixed(l.val_loss, 4) + Metrics(l.val_metrics, "val_");
  if (l.learning_rate > 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4e", l.learning_rate);  // as the seed's PrintLR shows small rates
    s += std::string(" - lr: ") + buf;
  }
  s += " - " + Fixed(std::round(l.images_per_sec), 0) + " images/s";
  return s;
}

ProgressPrinter::ProgressPrinter(FILE* out, const std::string& mode) : out_(out) {
  stream_ = mode == "stream";
  bar_ = stream_ || mode == "bar" || (mode == "auto" && isatty(fileno(out)));
}

void ProgressPrinter::Update(const EpochLine& l) {
  if (!bar_) return;
  double now = NowSeconds();
  if (l.step != l.steps && now - last_draw_ < (stream_ ? 0.2 : 0.1)) return;
  last_draw_ = now;
  const int width = 30;
  int filled = l.steps > 0 ? width * l.step / l.steps : width;
  std::string bar(static_cast<size_t>(filled), '=');
  if (filled < width) bar += '>' + std::string(static_cast<size_t>(width - filled - 1), '.');
  std::fprintf(out_, stream_ ? "%sEpoch %d/%d %d/%d [%s] - loss: %.4f%s\n" : "\r%sEpoch %d/%d %d/%d [%s] - loss: %.4f%s\x1b[K",
               stream_ ? kProgressMarker : "", l.epoch, l.epochs, l.step, l.steps, bar.c_str(), l.loss,
               Metrics(l.metrics, "").c_str());
  std::fflush(out_);
}

void ProgressPrinter::Finish(const EpochLine& l) {
  if (bar_ && !stream_) std::fputs("\r\x1b[K", out_);
  std::fprintf(out_, "%s\n", FormatEpochLine(l).c_str());
  std::fflush(out_);
}

}  // namespace ringtrain::train
