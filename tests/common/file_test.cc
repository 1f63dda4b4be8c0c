// ReadFile reads regular files only, and never more than its bound: a directory, a
// FIFO without a writer, /dev/zero and a socket are refused at once with one line.
#include "common/file.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace ringtrain {
namespace {

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void ExpectRefused(const StatusOr<std::string>& r, const std::string& path, const std::string& kind) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "'" + path + "' is " + kind + ", not a regular file");
}

TEST(ReadFileTest, ReadsARegularFile) {
  testing::TempDir tmp;
  Write(tmp.path() + "/f", std::string("a\0b", 3));
  auto r = ReadFile(tmp.path() + "/f", 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, std::string("a\0b", 3));
  EXPECT_EQ(*ReadFile(tmp.path() + "/f"), std::string("a\0b", 3));
}

TEST(ReadFileTest, MissingFileIsNotFound) {
  testing::TempDir tmp;
  auto r = ReadFile(tmp.path() + "/nope", 10);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

TEST(ReadFileTest, SpecialFilesAreRefusedWithoutReading) {
  testing::TempDir tmp;
  ExpectRefused(ReadFile(tmp.path(), 100), tmp.path(), "a directory");
  ExpectRefused(ReadFile("/dev/zero", 100), "/dev/zero", "a character device");
  ExpectRefused(ReadFile("/dev/urandom", 100), "/dev/urandom", "a character device");
  // A FIFO that nobody writes: open(2) must not block.
  const std::string fifo = tmp.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectRefused(ReadFile(fifo, 100), fifo, "a FIFO (named pipe)");
  ExpectRefused(ReadFilePrefix(fifo, 16), fifo, "a FIFO (named pipe)");
  // A listening Unix socket cannot even be opened (ENXIO); it is still named.
  const std::string sock = tmp.path() + "/sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof(addr.sun_path));
  std::copy(sock.begin(), sock.end(), addr.sun_path);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ExpectRefused(ReadFile(sock, 100), sock, "a socket");
  ::close(fd);
}

TEST(ReadFileTest, FilesLongerThanTheBoundAreRefusedNamingIt) {
  testing::TempDir tmp;
  const std::string path = tmp.path() + "/big";
  Write(path, std::string(3000, 'x'));
  auto r = ReadFile(path, 2048, "a job file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "'" + path + "' is 2.9 KiB, more than the 2.0 KiB a job file may have");
  EXPECT_TRUE(ReadFile(path, 3000).ok());
}

TEST(ReadFileTest, PrefixReadsOnlyThatFar) {
  testing::TempDir tmp;
  Write(tmp.path() + "/f", "0123456789");
  uint64_t size = 0;
  auto r = ReadFilePrefix(tmp.path() + "/f", 4, &size);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "0123");
  EXPECT_EQ(size, 10u);
  EXPECT_EQ(*ReadFilePrefix(tmp.path() + "/f", 100), "0123456789");
}

TEST(FormatBytesTest, UsesBinaryUnits) {
  EXPECT_EQ(FormatBytes(0), "0 bytes");
  EXPECT_EQ(FormatBytes(1), "1 byte");
  EXPECT_EQ(FormatBytes(1023), "1023 bytes");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{16} << 20), "16.0 MiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 40), "3.0 TiB");
}

}  // namespace
}  // namespace ringtrain
