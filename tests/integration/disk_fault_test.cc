// Real disk faults, end to end, with the real binary and a one-worker TF_CONFIG: a
// backup_dir on a small tmpfs that fills up mid-run, a read-only backup_dir, a
// read-only history_file directory, a full disk under model_checkpoint and an
// unwritable tensorboard_dir. Each exits 6 with one "error:" line that names the place
// and the system's reason; after a full backup disk is given room, a restart resumes
// from the newest good backup and saves the same model bytes as an uninterrupted run.
//
// The file systems are tmpfs mounts (root ignores permission bits, so "read-only" is a
// read-only mount); without the right to mount, the tests skip and say so. Every mount
// is undone in TearDown.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "process.h"
#include "test_jobs.h"

namespace ringtrain::testing {
namespace {

namespace fs = std::filesystem;

size_t CountErrorLines(const std::string& output) { return Count(output, "error:"); }

std::string ErrorLine(const std::string& output) {
  for (const std::string& line : Lines(output)) {
    if (line.find("error:") != std::string::npos) return line;
  }
  return "";
}

std::map<std::string, std::string> OneWorkerEnv() {
  return {{"TF_CONFIG", LoopbackTfConfig(FreePorts(1), 0)},
          {"RINGTRAIN_RENDEZVOUS_TIMEOUT_S", "60"},
          {"RINGTRAIN_PROGRESS", "lines"},
          {"RINGTRAIN_NUM_THREADS", "1"}};
}

ProcessResult RunWorker(const std::string& dir, const nlohmann::json& job, const std::string& name = "job") {
  const std::string path = dir + "/" + name + ".json";
  WriteFile(path, job.dump());
  Process p(RingtrainBinary(), {"worker", "--job", path}, OneWorkerEnv());
  ProcessResult r = p.Wait(180);
  EXPECT_FALSE(r.timed_out) << r.output;
  return r;
}

// Bytes a file takes on a tmpfs: whole pages.
uintmax_t Pages(uintmax_t bytes) {
  const uintmax_t page = static_cast<uintmax_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

class DiskFaultTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) {
      if (::umount2(it->c_str(), MNT_DETACH) != 0) ADD_FAILURE() << "umount " << *it << ": " << std::strerror(errno);
    }
  }

  // A tmpfs of `bytes` at <tmp>/<name>; false (and the test skips) if mounting is not
  // permitted here.
  bool MountTmpfs(const std::string& name, uintmax_t bytes, std::string* path) {
    *path = tmp_.path() + "/" + name;
    fs::create_directories(*path);
    const std::string options = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", path->c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      skip_reason_ = "cannot mount a tmpfs (" + std::string(std::strerror(errno)) +
                     "): these tests need root or CAP_SYS_ADMIN";
      return false;
    }
    mounts_.push_back(*path);
    return true;
  }
  void Remount(const std::string& path, unsigned long flags, const std::string& options) {
    ASSERT_EQ(::mount("tmpfs", path.c_str(), "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV | flags, options.c_str()), 0)
        << path << ": " << std::strerror(errno);
  }
  // Fills the file system at `dir` until it has no room left.
  void Fill(const std::string& dir) {
    const int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::string chunk(4096, 'f');
    while (::write(fd, chunk.data(), chunk.size()) > 0) {
    }
    const int err = errno;
    ::close(fd);
    ASSERT_EQ(err, ENOSPC) << std::strerror(err);
  }
  // One error line, with everything in `parts`.
  void ExpectOneErrorLine(const ProcessResult& r, const std::vector<std::string>& parts) {
    EXPECT_EQ(CountErrorLines(r.output), 1u) << r.output;
    const std::string line = ErrorLine(r.output);
    for (const std::string& part : parts) EXPECT_NE(line.find(part), std::string::npos) << part << " in: " << line;
  }

  TempDir tmp_;
  std::vector<std::string> mounts_;
  std::string skip_reason_;
};

// Backup files in `dir` by name, and their total size on a tmpfs.
struct BackupFiles {
  std::vector<std::string> names;
  uintmax_t pages = 0;
};
BackupFiles ListBackups(const std::string& dir) {
  BackupFiles out;
  for (const auto& e : fs::directory_iterator(dir)) {
    out.names.push_back(e.path().filename().string());
    out.pages += Pages(fs::file_size(e.path()));
  }
  std::sort(out.names.begin(), out.names.end());
  return out;
}

TEST_F(DiskFaultTest, BackupDirFillsUpMidRunThenARestartWithRoomResumes) {
  // The uninterrupted run: the reference model, and how big one backup is.
  const std::string ref_dir = tmp_.path() + "/ref";
  fs::create_directories(ref_dir);
  auto ref_job = RecoveryJob(ref_dir, 10);
  ref_job["backup_and_restore"]["delete_checkpoint"] = false;
  ProcessResult ref = RunWorker(ref_dir, ref_job);
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  const std::string reference = ReadFileOrEmpty(ref_dir + "/model.safetensors");
  ASSERT_FALSE(reference.empty());
  const BackupFiles kept = ListBackups(ref_dir + "/backup");
  ASSERT_EQ(kept.names.size(), 4u) << "the newest two backups";
  const uintmax_t one_backup = kept.pages / 2 + Pages(1);

  // Room for two and a half backups: the third one does not fit.
  std::string disk;
  if (!MountTmpfs("disk", one_backup * 5 / 2, &disk)) GTEST_SKIP() << skip_reason_;
  const std::string backup_dir = disk + "/backup";
  auto job = RecoveryJob(tmp_.path(), 10);
  job["backup_and_restore"]["backup_dir"] = backup_dir;
  ProcessResult full = RunWorker(tmp_.path(), job);
  EXPECT_EQ(full.exit_code, 6) << full.output;
  ExpectOneErrorLine(full, {backup_dir, "No space left on device", "backup_and_restore.backup_dir"});
  EXPECT_FALSE(fs::exists(tmp_.path() + "/model.safetensors")) << "the run stopped";

  // The two backups that fitted are there, whole, and nothing else. Which two depends
  // on timing: the background writer drops a waiting backup that a newer one supersedes
  // (usually steps 10 and 20; under load, for example 10 and 30).
  const BackupFiles left = ListBackups(backup_dir);
  ASSERT_EQ(left.names.size(), 4u) << ::testing::PrintToString(left.names);
  for (size_t i = 0; i < 4; i += 2) {
    const std::string stem = left.names[i].substr(0, left.names[i].size() - 5);
    EXPECT_EQ(left.names[i], stem + ".json") << ::testing::PrintToString(left.names);
    EXPECT_EQ(left.names[i + 1], stem + ".safetensors") << ::testing::PrintToString(left.names);
  }
  const std::string newest = left.names[2];

  // Room again: the restart resumes from the newest good backup and ends as the
  // uninterrupted run did.
  Remount(disk, 0, "size=" + std::to_string(one_backup * 8));
  ProcessResult resumed = RunWorker(tmp_.path(), job);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("restored the backup " + backup_dir + "/" + newest), std::string::npos)
      << resumed.output;
  EXPECT_EQ(resumed.output.find("corrupted"), std::string::npos) << resumed.output;
  EXPECT_EQ(ReadFileOrEmpty(tmp_.path() + "/model.safetensors"), reference)
      << "the resumed run's model differs from the uninterrupted run's";
}

TEST_F(DiskFaultTest, ReadOnlyBackupDirExits6) {
  std::string disk;
  if (!MountTmpfs("ro", 1 << 20, &disk)) GTEST_SKIP() << skip_reason_;
  fs::create_directories(disk + "/backup");
  Remount(disk, MS_RDONLY, "");
  auto job = RecoveryJob(tmp_.path(), 10);
  job["backup_and_restore"]["backup_dir"] = disk + "/backup";
  ProcessResult r = RunWorker(tmp_.path(), job);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  ExpectOneErrorLine(r, {disk + "/backup", std::strerror(EROFS)});
}

TEST_F(DiskFaultTest, ReadOnlyHistoryFileDirectoryExits6) {
  std::string disk;
  if (!MountTmpfs("ro", 1 << 20, &disk)) GTEST_SKIP() << skip_reason_;
  Remount(disk, MS_RDONLY, "");
  auto job = SmallSyntheticJob(tmp_.path());
  job["history_file"] = disk + "/history.jsonl";
  ProcessResult r = RunWorker(tmp_.path(), job);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  ExpectOneErrorLine(r, {disk + "/history.jsonl", std::strerror(EROFS), "history_file"});
}

TEST_F(DiskFaultTest, FullDiskUnderModelCheckpointExits6) {
  std::string disk;
  if (!MountTmpfs("full", 64 << 10, &disk)) GTEST_SKIP() << skip_reason_;
  Fill(disk);
  auto job = SmallSyntheticJob(tmp_.path());
  job["model_checkpoint"] = {{"filepath", disk + "/ckpt_{epoch}.safetensors"}};
  ProcessResult r = RunWorker(tmp_.path(), job);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  ExpectOneErrorLine(r, {disk + "/ckpt_1.safetensors", "No space left on device", "model_checkpoint"});
}

TEST_F(DiskFaultTest, UnwritableTensorBoardDirExits6) {
  std::string disk;
  if (!MountTmpfs("ro", 1 << 20, &disk)) GTEST_SKIP() << skip_reason_;
  Remount(disk, MS_RDONLY, "");
  auto job = SmallSyntheticJob(tmp_.path());
  job["tensorboard_dir"] = disk + "/logs";
  ProcessResult r = RunWorker(tmp_.path(), job);
  EXPECT_EQ(r.exit_code, 6) << r.output;
  ExpectOneErrorLine(r, {disk + "/logs", std::strerror(EROFS), "tensorboard_dir"});
}

}  // namespace
}  // namespace ringtrain::testing
