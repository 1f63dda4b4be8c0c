#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "security/cluster_secret.h"

namespace ringtrain::security {
namespace {

// RFC 4231, test case 2.
TEST(HmacTest, MatchesRfc4231) {
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacTest, Sha256MatchesFips180Vectors) {
  EXPECT_EQ(Hex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(HmacTest, ConstantTimeEqualAndRandom) {
  EXPECT_TRUE(ConstantTimeEqual("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "ab"));
  auto a = RandomBytes(32), b = RandomBytes(32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(ClusterSecretTest, ProofsAreBoundToSecretAndContext) {
  auto s = ClusterSecret::FromValue("0123456789abcdef-cluster");
  auto other = ClusterSecret::FromValue("0123456789abcdef-another");
  ASSERT_TRUE(s.ok() && other.ok());
  const std::string p = s->Proof("grpc", "m");
  EXPECT_EQ(p.size(), 32u);
  EXPECT_TRUE(s->Verify("grpc", "m", p));
  EXPECT_FALSE(s->Verify("data-plane", "m", p));
  EXPECT_FALSE(s->Verify("grpc", "n", p));
  EXPECT_FALSE(other->Verify("grpc", "m", p));
  EXPECT_EQ(s->Fingerprint().size(), 8u);
  EXPECT_NE(s->Fingerprint(), other->Fingerprint());
  ClusterSecret none;
  EXPECT_FALSE(none.configured());
  EXPECT_FALSE(none.Verify("grpc", "m", p));
  EXPECT_EQ(none.Fingerprint(), "none");
}

TEST(ClusterSecretTest, TooShortIsRefusedWithoutShowingIt) {
  auto s = ClusterSecret::FromValue("hunter2");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(s.status().message().find("hunter2"), std::string::npos);
}

TEST(ClusterSecretTest, FromSource) {
  auto none = ClusterSecret::FromSource(std::nullopt, std::nullopt);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->configured());

  auto v = ClusterSecret::FromSource(std::string("from-the-environment-1234"), std::nullopt);
  ASSERT_TRUE(v.ok());
  auto direct = ClusterSecret::FromValue("from-the-environment-1234");
  EXPECT_EQ(v->Fingerprint(), direct->Fingerprint());

  const std::string path = ::testing::TempDir() + "/secret";
  { std::ofstream(path) << "from-the-environment-1234\n"; }
  auto both = ClusterSecret::FromSource(std::string("from-the-environment-1234"), path);
  EXPECT_FALSE(both.ok());
  auto f = ClusterSecret::FromSource(std::nullopt, path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->Fingerprint(), direct->Fingerprint());  // the trailing newline is not part of it

  auto missing = ClusterSecret::FromSource(std::nullopt, std::string("/nonexistent/secret"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/secret"), std::string::npos);
  auto short_value = ClusterSecret::FromSource(std::string("short"), std::nullopt);
  ASSERT_FALSE(short_value.ok());
  EXPECT_NE(short_value.status().message().find("RINGTRAIN_CLUSTER_SECRET"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ringtrain::security
