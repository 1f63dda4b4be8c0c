#include "metrics/registry.h"

#include <algorithm>
#include <cmath>

namespace ringtrain::metrics {

void Counter::Add(double v) {
  if (!(v >= 0)) return;  // also NaN
  value_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  // The first bucket whose upper bound is >= v ("le": less than or equal).
  size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += v;
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    s.cumulative.push_back(running);
  }
  s.count = running;
  s.sum = sum_;
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

namespace {

const char* TypeName(int type) {
  switch (type) {
    case 0: return "counter";
    case 1: return "gauge";
    default: return "histogram";
  }
}

Status CheckLabels(const std::string& name, Labels* labels) {
  std::sort(labels->begin(), labels->end());
  for (size_t i = 0; i < labels->size(); ++i) {
    const std::string& l = (*labels)[i].first;
    if (!IsValidLabelName(l) || l == "le" || l == "quantile") {
      return InvalidArgumentError("metric " + name + ": '" + l + "' is not a valid label name");
    }
    if (i > 0 && (*labels)[i - 1].first == l) {
      return InvalidArgumentError("metric " + name + ": label '" + l + "' given twice");
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Registry::Series*> Registry::Find(const std::string& name, const std::string& help, Type type,
                                           const std::vector<double>& bounds, Labels labels) {
  if (!IsValidMetricName(name)) return InvalidArgumentError("'" + name + "' is not a valid metric name");
  RT_RETURN_IF_ERROR(CheckLabels(name, &labels));
  if (type == Type::kHistogram) {
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (!std::isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
        return InvalidArgumentError("histogram " + name + ": bucket bounds must be finite and strictly increasing");
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto fam = std::find_if(families_.begin(), families_.end(), [&](const Family& f) { return f.name == name; });
  if (fam == families_.end()) {
    families_.push_back(Family{name, help, type, bounds, {}});
    fam = families_.end() - 1;
  } else if (fam->type != type || fam->help != help || fam->bounds != bounds) {
    return InvalidArgumentError("metric " + name + " is already registered as another " +
                                TypeName(static_cast<int>(fam->type)) + " (help text or buckets differ)");
  }
  for (Series& s : fam->series) {
    if (s.labels == labels) return &s;
  }
  Series& s = fam->series.emplace_back();
  s.labels = std::move(labels);
  switch (type) {
    case Type::kCounter: s.counter = std::make_unique<Counter>(); break;
    case Type::kGauge: s.gauge = std::make_unique<Gauge>(); break;
    case Type::kHistogram: s.histogram = std::make_unique<Histogram>(bounds); break;
  }
  return &s;
}

StatusOr<Counter*> Registry::GetCounter(const std::string& name, const std::string& help, Labels labels) {
  RT_ASSIGN_OR_RETURN(Series * s, Find(name, help, Type::kCounter, {}, std::move(labels)));
  return s->counter.get();
}

StatusOr<Gauge*> Registry::GetGauge(const std::string& name, const std::string& help, Labels labels) {
  RT_ASSIGN_OR_RETURN(Series * s, Find(name, help, Type::kGauge, {}, std::move(labels)));
  return s->gauge.get();
}

StatusOr<Histogram*> Registry::GetHistogram(const std::string& name, const std::string& help,
                                            std::vector<double> bounds, Labels labels) {
  RT_ASSIGN_OR_RETURN(Series * s, Find(name, help, Type::kHistogram, bounds, std::move(labels)));
  return s->histogram.get();
}

std::string Registry::Render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Family& f : families_) {
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(static_cast<int>(f.type)) + "\n";
    for (const Series& s : f.series) {
      if (s.counter) out += f.name + FormatLabels(s.labels) + " " + FormatValue(s.counter->value()) + "\n";
      if (s.gauge) out += f.name + FormatLabels(s.labels) + " " + FormatValue(s.gauge->value()) + "\n";
      if (s.histogram) {
        Histogram::Snapshot h = s.histogram->Read();
        for (size_t i = 0; i <= h.bounds.size(); ++i) {
          const std::string le = i < h.bounds.size() ? FormatValue(h.bounds[i]) : "+Inf";
          out += f.name + "_bucket" + FormatLabels(s.labels, "le", le) + " " +
                 FormatValue(static_cast<double>(h.cumulative[i])) + "\n";
        }
        out += f.name + "_sum" + FormatLabels(s.labels) + " " + FormatValue(h.sum) + "\n";
        out += f.name + "_count" + FormatLabels(s.labels) + " " + FormatValue(static_cast<double>(h.count)) + "\n";
      }
    }
  }
  return out;
}

double Registry::ValueOf(const std::string& name, Labels labels) const {
  std::sort(labels.begin(), labels.end());
  std::lock_guard<std::mutex> lock(mu_);
  for (const Family& f : families_) {
    if (f.name != name) continue;
    for (const Series& s : f.series) {
      if (s.labels != labels) continue;
      if (s.counter) return s.counter->value();
      if (s.gauge) return s.gauge->value();
    }
  }
  return std::nan("");
}

}  // namespace ringtrain::metrics
