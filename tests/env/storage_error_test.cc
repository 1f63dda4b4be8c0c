// StorageError: tagged kStorage (exit code 6), the code kept, and a remedy that fits.
#include <gtest/gtest.h>

#include "common/exit_policy.h"
#include "env/storage_error.h"

namespace ringtrain::env {
namespace {

TEST(StorageErrorTest, SaysWhatToDoForEachKindOfFailure) {
  Status full = StorageError(ErrnoError("cannot write 'h.tmp.1'", ENOSPC), "writing the history file", "history_file");
  EXPECT_EQ(full.code(), Code::kResourceExhausted);
  EXPECT_EQ(full.subject(), Subject::kStorage);
  EXPECT_EQ(ExitCodeFor(full), 6);
  EXPECT_FALSE(IsTransient(full));
  EXPECT_EQ(full.message(),
            "writing the history file: cannot write 'h.tmp.1': No space left on device; free space on that file "
            "system or point history_file elsewhere");

  Status ro = StorageError(ErrnoError("cannot create 'd/x'", EROFS), "tensorboard_dir", "tensorboard_dir");
  EXPECT_EQ(ro.code(), Code::kPermissionDenied);
  EXPECT_EQ(ExitCodeFor(ro), 6);
  EXPECT_NE(ro.message().find("Read-only file system; make it writable or point tensorboard_dir elsewhere"),
            std::string::npos)
      << ro.message();

  Status io = StorageError(ErrnoError("cannot fsync 'f'", EIO), "", "save_model");
  EXPECT_EQ(io.code(), Code::kInternal);
  EXPECT_EQ(ExitCodeFor(io), 6);
  EXPECT_EQ(io.message(), "cannot fsync 'f': Input/output error; check the path and the disk or point save_model "
                          "elsewhere");
}

TEST(StorageErrorTest, KeepsAnInnerSubjectAndOk) {
  EXPECT_TRUE(StorageError(Status::Ok(), "x", "y").ok());
  Status data = StorageError(DataLossError("truncated").About(Subject::kData), "x", "y");
  EXPECT_EQ(data.subject(), Subject::kData) << "the innermost edge wins";
}

}  // namespace
}  // namespace ringtrain::env
