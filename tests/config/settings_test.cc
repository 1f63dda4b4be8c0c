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
