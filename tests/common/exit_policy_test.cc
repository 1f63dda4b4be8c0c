// Pins the one exit-code policy (common/exit_policy.h): every subject with every code,
// what a supervisor restarts, and which of a cluster's exit codes names the root cause.
// docs/reference/exit-codes.md's table documents exactly this.
#include "common/exit_policy.h"

#include <csignal>
#include <map>

#include <gtest/gtest.h>

namespace ringtrain {
namespace {

const Code kAllCodes[] = {Code::kInvalidArgument,   Code::kNotFound,      Code::kDeadlineExceeded,
                          Code::kUnavailable,       Code::kAborted,       Code::kFailedPrecondition,
                          Code::kDataLoss,          Code::kPermissionDenied, Code::kUnimplemented,
                          Code::kResourceExhausted, Code::kInternal};

TEST(ExitPolicyTest, TheWholeTable) {
  // Rows: subject; columns: the codes above, in order.
  const std::map<Subject, std::vector<int>> table = {
      //                     INV NF  DL  UNA ABO FP  DLO PD  UNI RES INT
      {Subject::kUnknown, {2, 1, 5, 5, 5, 1, 1, 2, 2, 2, 1}},
      {Subject::kConfig, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}},
      {Subject::kData, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
      {Subject::kCluster, {2, 4, 4, 4, 4, 2, 4, 2, 2, 2, 4}},
      {Subject::kPeers, {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}},
      {Subject::kStorage, {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6}},
  };
  for (const auto& [subject, row] : table) {
    ASSERT_EQ(row.size(), std::size(kAllCodes));
    for (size_t i = 0; i < row.size(); ++i) {
      Status s = Status(kAllCodes[i], "x").About(subject);
      EXPECT_EQ(ExitCodeFor(s), row[i]) << SubjectName(subject) << " / " << CodeName(kAllCodes[i]);
      EXPECT_EQ(IsTransient(s), row[i] == 4 || row[i] == 5) << SubjectName(subject) << " / " << CodeName(kAllCodes[i]);
    }
  }
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFor(Status::Ok().About(Subject::kStorage)), 0);
  EXPECT_FALSE(IsTransient(Status::Ok()));
}

TEST(ExitPolicyTest, TheInnermostSubjectWinsAndContextKeepsIt) {
  Status disk = ResourceExhaustedError("no space left on device").About(Subject::kStorage);
  Status wrapped = disk.WithContext("history_file").About(Subject::kPeers);
  EXPECT_EQ(wrapped.subject(), Subject::kStorage);
  EXPECT_EQ(wrapped.message(), "history_file: no space left on device");
  EXPECT_EQ(ExitCodeFor(wrapped), kExitCheckpoint);
}

TEST(ExitPolicyTest, ErrnoCodesFollowWhatWentWrong) {
  EXPECT_EQ(ErrnoError("w", ENOSPC).code(), Code::kResourceExhausted);
  EXPECT_EQ(ErrnoError("w", EDQUOT).code(), Code::kResourceExhausted);
  EXPECT_EQ(ErrnoError("w", EROFS).code(), Code::kPermissionDenied);
  EXPECT_EQ(ErrnoError("w", EACCES).code(), Code::kPermissionDenied);
  EXPECT_EQ(ErrnoError("w", EISDIR).code(), Code::kFailedPrecondition);
  EXPECT_EQ(ErrnoError("w", ENOENT).code(), Code::kNotFound);
  EXPECT_EQ(ErrnoError("w", ECONNRESET).code(), Code::kUnavailable);
  EXPECT_EQ(ErrnoError("w", EIO).code(), Code::kInternal);
  // Whatever the errno, a file of the job's data is bad data and an output file a storage error.
  for (int e : {ENOSPC, EIO, EISDIR, EACCES, ENOENT}) {
    EXPECT_EQ(ExitCodeFor(ErrnoError("w", e).About(Subject::kData)), kExitBadData) << e;
    EXPECT_EQ(ExitCodeFor(ErrnoError("w", e).About(Subject::kStorage)), kExitCheckpoint) << e;
  }
}

TEST(ExitPolicyTest, WhatASupervisorRestarts) {
  const std::map<int, bool> restart = {{0, false}, {1, true}, {2, false}, {3, false},   {4, true},
                                       {5, true},  {6, false}, {7, true}, {137, true}, {143, true}};
  for (const auto& [code, expected] : restart) EXPECT_EQ(IsRestartableExit(code), expected) << code;
  EXPECT_EQ(ExitCodeOfSignal(SIGTERM), 143);
  EXPECT_EQ(ExitCodeOfSignal(SIGKILL), 137);
}

TEST(ExitPolicyTest, TheRootCauseOfAClusterFailure) {
  EXPECT_EQ(RootCauseExit({}), 0);
  EXPECT_EQ(RootCauseExit({0, 0}), 0);
  // The chief's disk filled (6); the worker saw its peer go (5), before or after.
  EXPECT_EQ(RootCauseExit({5, 6}), 6);
  EXPECT_EQ(RootCauseExit({6, 5}), 6);
  EXPECT_EQ(RootCauseExit({5, 1}), 1);
  EXPECT_EQ(RootCauseExit({5, 4}), 4);
  EXPECT_EQ(RootCauseExit({5, 137}), 137);
  EXPECT_EQ(RootCauseExit({3, 2}), 3);  // two permanent failures: the first
  // The SIGTERM the launcher sent to the survivors is not the cause.
  EXPECT_EQ(RootCauseExit({143, 5}, {143}), 5);
  EXPECT_EQ(RootCauseExit({143}, {143}), 143);
  // A preempted task (7): the others' peer failures followed from it; a real failure still wins.
  EXPECT_EQ(RootCauseExit({5, 7}), 7);
  EXPECT_EQ(RootCauseExit({7, 7, 5}), 7);
  EXPECT_EQ(RootCauseExit({7, 6}), 6);
}

TEST(ExitPolicyTest, MeaningsNameTheSignal) {
  EXPECT_EQ(ExitCodeMeaning(6), "storage error (model, backup, checkpoint or history file)");
  EXPECT_EQ(ExitCodeMeaning(143), "killed by signal 15 (SIGTERM)");
  EXPECT_EQ(ExitCodeMeaning(7), "preempted (stopped on SIGTERM/SIGINT after a backup; restart to resume)");
  EXPECT_EQ(ExitCodeMeaning(137), "killed by signal 9 (SIGKILL)");
}

}  // namespace
}  // namespace ringtrain
