// The benchmark's figures (busbw as nccl-tests defines it, medians, the size
// schedule) and how its rows are printed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/allreduce_bench.h"
#include "bench/report.h"

namespace ringtrain::bench {
namespace {

TEST(ScheduleTest, FactorFourFromMinToMax) {
  auto sizes = SizeSchedule(4, 64 << 20);
  ASSERT_EQ(sizes.size(), 13u);
  EXPECT_EQ(sizes.front(), 4u);
  EXPECT_EQ(sizes.back(), size_t{64} << 20);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], sizes[i - 1] * 4);
  EXPECT_EQ(SizeSchedule(4, 100), (std::vector<size_t>{4, 16, 64}));
  EXPECT_EQ(SizeSchedule(1024, 1024), (std::vector<size_t>{1024}));
  EXPECT_EQ(SizeSchedule(1 << 20, 1 << 30).back(), size_t{1} << 30);
  EXPECT_TRUE(SizeSchedule(8, 4).empty());
}

TEST(ScheduleTest, ValidatesOptions) {
  BenchOptions o;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.min_bytes = 6;
  EXPECT_NE(ValidateOptions(o).message().find("--min_bytes"), std::string::npos);
  o = BenchOptions{};
  o.max_bytes = 2;
  EXPECT_NE(ValidateOptions(o).message().find("--max_bytes"), std::string::npos);
  o = BenchOptions{};
  o.min_bytes = 1024;
  o.max_bytes = 512;
  EXPECT_EQ(ValidateOptions(o).code(), Code::kInvalidArgument);
  o = BenchOptions{};
  o.iters = 0;
  EXPECT_NE(ValidateOptions(o).message().find("--iters"), std::string::npos);
  o = BenchOptions{};
  o.warmup = -1;
  EXPECT_NE(ValidateOptions(o).message().find("--warmup"), std::string::npos);
}

TEST(BandwidthTest, BusBandwidthIsAlgorithmBandwidthTimesTwoNMinusOneOverN) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(8), 1.75);
  // 1e6 bytes in 1000 us = 1 GB/s.
  BenchRow row = MakeRow(1000000, 1000.0, 4);
  EXPECT_EQ(row.bytes, 1000000u);
  EXPECT_DOUBLE_EQ(row.time_us, 1000.0);
  EXPECT_DOUBLE_EQ(row.algbw_GBps, 1.0);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 1.5);
  EXPECT_DOUBLE_EQ(MakeRow(64 << 20, 0.0, 2).algbw_GBps, 0.0);
}

TEST(BandwidthTest, Median) {
  EXPECT_DOUBLE_EQ(Median({}), 0.0);
  EXPECT_DOUBLE_EQ(Median({5}), 5.0);
  EXPECT_DOUBLE_EQ(Median({9, 1, 5}), 5.0);
  EXPECT_DOUBLE_EQ(Median({100, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({7, 7, 1000, 7, 1}), 7.0);
}

TEST(ReportTest, TextRowsAlignUnderTheHeader) {
  RunDescription run;
  run.ranks = 2;
  run.backend = "RING";
  run.requested = "tcp";
  run.transport = "tcp";
  std::string header = FormatHeader(run);
  EXPECT_NE(header.find("2 ranks, backend RING, transport tcp (--backend tcp)"), std::string::npos) << header;
  EXPECT_NE(header.find("median"), std::string::npos);
  std::string columns = header.substr(header.rfind('#'));
  EXPECT_EQ(columns, "#      bytes       time_us    algbw_GBps    busbw_GBps\n");
  std::string row = FormatRow(MakeRow(1048576, 524.288, 2));
  EXPECT_EQ(row, "     1048576        524.29         2.000         2.000\n");
  EXPECT_EQ(row.size(), columns.size());
  for (size_t end : {size_t{12}, size_t{26}, size_t{40}, size_t{54}}) {
    EXPECT_NE(columns[end - 1], ' ') << end;  // each column ends in the same place
    EXPECT_NE(row[end - 1], ' ') << end;
  }
  // Header lines all start with '#', so tools that skip comments read only rows.
  size_t pos = 0;
  while (pos < header.size()) {
    EXPECT_EQ(header[pos], '#');
    pos = header.find('\n', pos) + 1;
  }
}

TEST(ReportTest, JsonRowHasTheColumnsWorkersAndBackend) {
  RunDescription run;
  run.ranks = 4;
  run.backend = "RING";
  std::string line = FormatJsonRow(MakeRow(4096, 40.0, 4), run);
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("bytes").get<size_t>(), 4096u);
  EXPECT_DOUBLE_EQ(j.at("time_us").get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(j.at("algbw_GBps").get<double>(), 0.102);
  EXPECT_DOUBLE_EQ(j.at("busbw_GBps").get<double>(), 0.154);
  EXPECT_EQ(j.at("workers").get<int>(), 4);
  EXPECT_EQ(j.at("backend").get<std::string>(), "RING");
  EXPECT_FALSE(j.contains("transport"));
  run.transport = "tcp";
  EXPECT_EQ(nlohmann::json::parse(FormatJsonRow(MakeRow(4096, 40.0, 4), run)).at("transport"), "tcp");
  EXPECT_EQ(line.rfind("{\"bytes\":4096,\"time_us\":40.0,", 0), 0u) << line;
}

}  // namespace
}  // namespace ringtrain::bench
