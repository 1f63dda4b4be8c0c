#include "config/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ringtrain::config {
namespace {

TEST(SettingsTest, DefaultsAndOverrides) {
  unsetenv("RINGTRAIN_RENDEZVOUS_TIMEOUT_S");
  auto d = LoadSettings();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->rendezvous_timeout_s, 300);
  setenv("RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "12.5", 1);
  auto s = LoadSettings();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rendezvous_timeout_s, 12.5);
  EXPECT_NE(Describe(*s).find("RINGTRAIN_RENDEZVOUS_TIMEOUT_S=12.5"), std::string::npos);
  setenv("RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "soon", 1);
  auto bad = LoadSettings();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RINGTRAIN_RENDEZVOUS_TIMEOUT_S"), std::string::npos);
  unsetenv("RINGTRAIN_RENDEZVOUS_TIMEOUT_S");
}

TEST(SettingsTest, StragglerAndFaultInjectionSettings) {
  auto d = LoadSettings();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->straggler_share, 0.2);
  EXPECT_EQ(d->straggler_steps, 10);
  EXPECT_EQ(d->fault_compute_delay_ms, 0);
  EXPECT_EQ(Describe(*d).find("RINGTRAIN_FAULT_COMPUTE_DELAY_MS"), std::string::npos);  // said only when set
  setenv("RINGTRAIN_STRAGGLER_SHARE", "0.5", 1);
  setenv("RINGTRAIN_STRAGGLER_STEPS", "4", 1);
  setenv("RINGTRAIN_FAULT_COMPUTE_DELAY_MS", "30", 1);
  auto s = LoadSettings();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->straggler_share, 0.5);
  EXPECT_EQ(s->straggler_steps, 4);
  EXPECT_EQ(s->fault_compute_delay_ms, 30);
  EXPECT_NE(Describe(*s).find("RINGTRAIN_STRAGGLER_SHARE=0.5"), std::string::npos);
  EXPECT_NE(Describe(*s).find("RINGTRAIN_FAULT_COMPUTE_DELAY_MS=30"), std::string::npos);
  for (const char* bad : {"-0.1", "nan", "x"}) {
    setenv("RINGTRAIN_STRAGGLER_SHARE", bad, 1);
    auto b = LoadSettings();
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("RINGTRAIN_STRAGGLER_SHARE"), std::string::npos);
  }
  setenv("RINGTRAIN_STRAGGLER_SHARE", "0.2", 1);
  setenv("RINGTRAIN_STRAGGLER_STEPS", "0", 1);
  EXPECT_FALSE(LoadSettings().ok());
  unsetenv("RINGTRAIN_STRAGGLER_SHARE");
  unsetenv("RINGTRAIN_STRAGGLER_STEPS");
  unsetenv("RINGTRAIN_FAULT_COMPUTE_DELAY_MS");
}

TEST(SettingsTest, EvaluatorTimeout) {
  unsetenv("RINGTRAIN_EVALUATOR_TIMEOUT_S");
  EXPECT_EQ(LoadSettings()->evaluator_timeout_s, 3600);
  setenv("RINGTRAIN_EVALUATOR_TIMEOUT_S", "90", 1);
  auto s = LoadSettings();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->evaluator_timeout_s, 90);
  EXPECT_NE(Describe(*s).find("RINGTRAIN_EVALUATOR_TIMEOUT_S=90 (default 3600)"), std::string::npos);
  setenv("RINGTRAIN_EVALUATOR_TIMEOUT_S", "-1", 1);
  auto bad = LoadSettings();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("RINGTRAIN_EVALUATOR_TIMEOUT_S"), std::string::npos);
  unsetenv("RINGTRAIN_EVALUATOR_TIMEOUT_S");
}

}  // namespace
}  // namespace ringtrain::config
