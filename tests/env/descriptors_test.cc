// The descriptor reserve and the open-file limit. Each case runs in a forked child,
// because it lowers RLIMIT_NOFILE and takes every descriptor the child has.
#include "env/descriptors.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <vector>

#include "env/env.h"
#include "testing/sanitizers.h"
#include "testing/temp_dir.h"

namespace ringtrain::env {
namespace {

// Runs `body` in a child process; the child's exit code is the number of the first
// failed check (0: all passed).
int InChild(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

// Opens /dev/null until open(2) fails; returns the descriptors.
std::vector<int> TakeEveryDescriptor() {
  std::vector<int> fds;
  for (;;) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    fds.push_back(fd);
  }
  return fds;
}

TEST(DescriptorsTest, FilesCanBeWrittenWhenEveryOtherDescriptorIsTaken) {
  // With every descriptor taken, UBSan's vptr check cannot probe memory (it needs a
  // pipe) and reports a false "invalid vptr"; the normal build runs this test.
  if (testing::kAddressSanitizer) GTEST_SKIP() << "needs free descriptors for the sanitizers' own checks";
  testing::TempDir dir;
  const std::string path = dir.path() + "/backup.bin";
  const int failed = InChild([&] {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = 64;
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return 1;
    if (ReserveDescriptors(4) != 4) return 2;
    std::vector<int> taken = TakeEveryDescriptor();
    if (errno != EMFILE) return 3;
    // Three files in a row, each closed before the next: the reserve gives one number
    // and takes it back each time.
    for (int i = 0; i < 3; ++i) {
      auto file = Default()->NewWritableFile(path + std::to_string(i));
      if (!file.ok()) return 4;
      if (ReservedDescriptors() != 3) return 5;
      if (!(*file)->Append("bytes").ok() || !(*file)->Sync().ok() || !(*file)->Close().ok()) return 6;
      if (ReservedDescriptors() != 4) return 7;
    }
    if (!Default()->SyncDir(dir.path()).ok()) return 8;
    if (!Default()->GetChildren(dir.path()).ok()) return 9;
    // Four files open at once use the whole reserve; a fifth fails, after the retries,
    // as RESOURCE_EXHAUSTED naming the file.
    std::vector<std::unique_ptr<WritableFile>> open;
    for (int i = 0; i < 4; ++i) {
      auto file = Default()->NewWritableFile(path + "-open" + std::to_string(i));
      if (!file.ok()) return 10;
      open.push_back(std::move(file).value());
    }
    auto fifth = Default()->NewWritableFile(path + "-fifth");
    if (fifth.ok() || fifth.status().code() != Code::kResourceExhausted) return 11;
    if (fifth.status().message().find(path + "-fifth") == std::string::npos) return 12;
    return 0;
  });
  EXPECT_EQ(failed, 0) << "check " << failed << " failed";
}

TEST(DescriptorsTest, TheSoftLimitIsRaisedToTheHardLimit) {
  const int failed = InChild([] {
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < 128) return 0;  // nothing to raise to
    lim.rlim_cur = 100;
    if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return 1;
    const OpenFileLimit raised = RaiseOpenFileLimit();
    if (raised.soft_before != 100 || !raised.error.empty()) return 2;
    rlimit now{};
    ::getrlimit(RLIMIT_NOFILE, &now);
    if (now.rlim_cur != now.rlim_max || raised.soft != raised.hard) return 3;
    if (Describe(raised).find("soft limit 100 raised to") == std::string::npos) return 4;
    return 0;
  });
  EXPECT_EQ(failed, 0) << "check " << failed << " failed";
}

}  // namespace
}  // namespace ringtrain::env
