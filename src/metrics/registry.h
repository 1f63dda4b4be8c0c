// A small Prometheus registry: counters, gauges and histograms, each a family (one
// name, help text and type) of series told apart by their labels, rendered in the text
// exposition format 0.0.4 (# HELP, # TYPE, histograms' _bucket{le=...}, _sum, _count).
//
// Threading: every call is thread-safe. Updating a series (Counter::Add, Gauge::Set,
// Histogram::Observe) takes no registry lock and never blocks for long, so the training
// thread may call it; Render takes a consistent copy of each series.
// Ownership: the registry owns its series; the pointers it returns stay valid for its
// lifetime. Errors: an invalid name or label, or a name registered again with another
// type, help text or bucket list, is INVALID_ARGUMENT (a programming error, found by the
// first run of any test).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "metrics/exposition.h"

namespace ringtrain::metrics {

// Only goes up (Prometheus counters restart from 0 with the process).
class Counter {
 public:
  void Add(double v = 1);  // v < 0 or NaN is ignored: a counter never decreases
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, strictly increasing and finite (+Inf is implied).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);  // NaN is ignored

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  mutable std::mutex mu_;
  const std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), +Inf last; guarded by mu_
  double sum_ = 0;                // guarded by mu_
};

// Bucket bounds `start`, start*factor, ... (`count` of them), as Prometheus' client
// libraries' ExponentialBuckets.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class Registry {
 public:
  // The series of family `name` with `labels` (created on first use; the same pointer
  // for the same labels, in any order given).
  StatusOr<Counter*> GetCounter(const std::string& name, const std::string& help, Labels labels = {});
  StatusOr<Gauge*> GetGauge(const std::string& name, const std::string& help, Labels labels = {});
  StatusOr<Histogram*> GetHistogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                    Labels labels = {});

  // The whole registry, families in the order they were first registered, series in
  // the order they were created. Ends with a newline (an empty string when empty).
  std::string Render() const;

  // The value of a counter or gauge series, for tests and for the status page; NaN if
  // there is none.
  double ValueOf(const std::string& name, Labels labels = {}) const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;  // sorted by name
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<double> bounds;  // histograms
    std::deque<Series> series;
  };
  StatusOr<Series*> Find(const std::string& name, const std::string& help, Type type,
                         const std::vector<double>& bounds, Labels labels);

  mutable std::mutex mu_;
  std::deque<Family> families_;  // guarded by mu_; deque: pointers to series stay valid
};

}  // namespace ringtrain::metrics
