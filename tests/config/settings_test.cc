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

}  // namespace
}  // namespace ringtrain::config
