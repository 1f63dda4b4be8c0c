// The training tasks one `ringtrain worker` process runs, each on its own thread: those
// it was started with (--host_tasks) and, under an elastic job, absent tasks the chief's
// service hands it to host (their virtual ranks). Wait() returns the process's exit code.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace ringtrain::cli {

class TaskHost {
 public:
  // Runs training task `rank` to its end and returns its exit code; `adopted`: it was
  // handed to this process, not started with it. Called on a thread of its own.
  using RunTask = std::function<int(int rank, bool adopted)>;
  explicit TaskHost(RunTask run) : run_(std::move(run)) {}
  ~TaskHost();  // joins what is left; never throws

  // Starts `rank` unless this process already runs it, or its own tasks have all ended.
  // Any thread (the heartbeat's).
  void Start(int rank, bool adopted);
  // Blocks until every task ended. The root cause (common/exit_policy.h) over the codes
  // of the tasks the process was started with; an adopted task's end is logged, and
  // counts only through them (its owner's supervisor answers for it).
  int Wait();

 private:
  RunTask run_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<int, std::thread> threads_;  // by rank, while its task runs
  std::vector<int> own_codes_;
  int own_running_ = 0;
  bool closed_ = false;  // the own tasks ended: no new adoption
  std::vector<std::thread> ended_;  // threads whose task ended, to join
};

}  // namespace ringtrain::cli
