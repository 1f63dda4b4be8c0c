#include "store/store.h"

#include <gtest/gtest.h>

#include <thread>

namespace ringtrain {
namespace {

TEST(InMemoryStoreTest, GetWaitsForSet) {
  store::InMemoryStore store;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(store.Set("k", "v").ok());
  });
  auto v = store.Get("k", Deadline::After(std::chrono::seconds(10)));
  setter.join();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "v");
}

TEST(InMemoryStoreTest, GetTimesOutNamingKey) {
  store::InMemoryStore store;
  auto v = store.Get("missing", Deadline::After(std::chrono::milliseconds(10)));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Code::kDeadlineExceeded);
  EXPECT_NE(v.status().message().find("missing"), std::string::npos);
}

TEST(PrefixStoreTest, Prefixes) {
  store::InMemoryStore base;
  store::PrefixStore a(&base, "a/");
  ASSERT_TRUE(a.Set("x", "1").ok());
  auto v = base.Get("a/x", Deadline::After(std::chrono::milliseconds(10)));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "1");
}

}  // namespace
}  // namespace ringtrain
