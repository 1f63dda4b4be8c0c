// The registry and Prometheus' text format 0.0.4: values, escaping, histogram buckets.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace ringtrain::metrics {
namespace {

TEST(ExpositionTest, FormatsValuesAsPrometheusReadsThem) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(1e-5), "1e-05");
  EXPECT_EQ(FormatValue(0.0005), "0.0005");
  EXPECT_EQ(FormatValue(16.384), "16.384");
  EXPECT_EQ(FormatValue(1795493349.9184704), "1.7954933499184704e+09");  // as Go writes it
  EXPECT_EQ(FormatValue(-2.5), "-2.5");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(std::stod(FormatValue(0.1 + 0.2)), 0.1 + 0.2);  // round-trips
}

TEST(ExpositionTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeHelp("x \"y\" \\ z\n"), "x \"y\" \\\\ z\\n");  // quotes stay in help
  EXPECT_EQ(FormatLabels({{"task", "worker:1"}, {"phase", "a\"b"}}), "{task=\"worker:1\",phase=\"a\\\"b\"}");
  EXPECT_EQ(FormatLabels({}), "");
  EXPECT_EQ(FormatLabels({}, "le", "+Inf"), "{le=\"+Inf\"}");
}

TEST(ExpositionTest, ValidNames) {
  EXPECT_TRUE(IsValidMetricName("ringtrain_steps_total"));
  EXPECT_TRUE(IsValidMetricName("job:rate5m"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("task"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(RegistryTest, RendersCountersAndGaugesWithHelpTypeAndLabels) {
  Registry r;
  Counter* c = r.GetCounter("x_total", "Things \\ done.\nTwice.", {{"task", "worker:0"}}).value();
  Gauge* g = r.GetGauge("y", "A gauge.").value();
  c->Add(2);
  c->Add(0.5);
  c->Add(-7);  // ignored: a counter never goes down
  g->Set(-1.5);
  EXPECT_EQ(r.Render(),
            "# HELP x_total Things \\\\ done.\\nTwice.\n"
            "# TYPE x_total counter\n"
            "x_total{task=\"worker:0\"} 2.5\n"
            "# HELP y A gauge.\n"
            "# TYPE y gauge\n"
            "y -1.5\n");
}

TEST(RegistryTest, SameLabelsInAnyOrderAreTheSameSeries) {
  Registry r;
  Counter* a = r.GetCounter("c_total", "h", {{"a", "1"}, {"b", "2"}}).value();
  Counter* b = r.GetCounter("c_total", "h", {{"b", "2"}, {"a", "1"}}).value();
  Counter* other = r.GetCounter("c_total", "h", {{"a", "1"}, {"b", "3"}}).value();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  a->Add(1);
  EXPECT_EQ(r.ValueOf("c_total", {{"b", "2"}, {"a", "1"}}), 1);
  EXPECT_TRUE(std::isnan(r.ValueOf("c_total", {{"a", "9"}})));
}

TEST(RegistryTest, RefusesBadNamesAndConflictingRegistrations) {
  Registry r;
  EXPECT_FALSE(r.GetCounter("bad-name", "h").ok());
  EXPECT_FALSE(r.GetCounter("ok_total", "h", {{"__reserved", "x"}}).ok());
  EXPECT_FALSE(r.GetCounter("ok_total", "h", {{"a", "x"}, {"a", "y"}}).ok());
  EXPECT_FALSE(r.GetHistogram("h_seconds", "h", {1, 1}).ok());  // not strictly increasing
  EXPECT_FALSE(r.GetHistogram("h_seconds", "h", {1}, {{"le", "x"}}).ok());
  ASSERT_TRUE(r.GetCounter("same", "h").ok());
  EXPECT_FALSE(r.GetGauge("same", "h").ok());
  EXPECT_FALSE(r.GetCounter("same", "other help").ok());
}

TEST(RegistryTest, HistogramBucketsAreCumulativeWithSumAndCount) {
  Registry r;
  Histogram* h = r.GetHistogram("step_seconds", "Step time.", {0.25, 0.5, 1}, {{"phase", "compute"}}).value();
  for (double v : {0.125, 0.25, 0.375, 0.75, 2.0, std::nan("")}) h->Observe(v);
  EXPECT_EQ(r.Render(),
            "# HELP step_seconds Step time.\n"
            "# TYPE step_seconds histogram\n"
            "step_seconds_bucket{phase=\"compute\",le=\"0.25\"} 2\n"  // le: 0.25 itself counts
            "step_seconds_bucket{phase=\"compute\",le=\"0.5\"} 3\n"
            "step_seconds_bucket{phase=\"compute\",le=\"1\"} 4\n"
            "step_seconds_bucket{phase=\"compute\",le=\"+Inf\"} 5\n"
            "step_seconds_sum{phase=\"compute\"} 3.5\n"
            "step_seconds_count{phase=\"compute\"} 5\n");
}

TEST(RegistryTest, ExponentialBuckets) {
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 4), (std::vector<double>{0.5, 1, 2, 4}));
}

TEST(RegistryTest, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  Counter* c = r.GetCounter("n_total", "h").value();
  Histogram* h = r.GetHistogram("v", "h", {1}).value();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->Add(1);
        h->Observe(0.5);
        if (i % 1000 == 0) (void)r.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->value(), 40000);
  EXPECT_EQ(h->Read().count, 40000u);
  EXPECT_EQ(h->Read().cumulative[0], 40000u);
}

}  // namespace
}  // namespace ringtrain::metrics
