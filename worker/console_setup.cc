#include "console_setup.h"

#include <filesystem>

#include "common/log_file.h"
#include "local_cluster.h"

namespace ringtrain::cli {

Status SetUpTaskLogging(const Flags& flags) {
  if (!flags.has(kLogFileFlag)) return Status::Ok();
  RT_RETURN_IF_ERROR(SetLogFile(flags.get(kLogFileFlag)));
  if (flags.get(kVerboseFlag, "false") != "true") {
    SetConsoleLogLevel(LogLevel::kWarning);
    SetConsoleLogPlain(true);  // the console shows "WARNING: ..."; the file keeps the full line
  }
  return Status::Ok();
}

Status ConfigureLaunchOutput(const Flags& flags, bool verbose, const std::string& job, console::LineMux* console,
                             LocalClusterOptions* o, std::string* log_dir) {
  const std::string output = flags.get("output", "default");
  if (output != "default" && output != "all") {
    return InvalidArgumentError("--output must be default (the chief's progress, every task's warnings and errors) "
                                "or all (every line of every task, prefixed), not '" + output + "'")
        .About(Subject::kConfig);
  }
  const bool all = output == "all";
  verbose = verbose || flags.get(kVerboseFlag, "false") == "true";
  std::string dir = flags.get("log_dir");
  if (dir.empty()) {
    std::filesystem::path parent = std::filesystem::path(job).parent_path();
    dir = (parent.empty() ? std::filesystem::path("logs") : parent / "logs").string();
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return InvalidArgumentError("cannot create the log directory '" + dir + "': " + ec.message() +
                                "; pass --log_dir DIR with a writable directory")
        .About(Subject::kConfig);
  }
  *log_dir = dir;
  o->console = console;
  o->announce = all;
  o->echo = [all](int index) { return all ? Echo::kPrefixed : index == 0 ? Echo::kConsole : Echo::kStderrOnly; };
  // --output all shows every line as before this console existed: INFO too.
  const bool task_verbose = verbose || all;
  o->task_args = [dir, task_verbose](int index) {
    std::vector<std::string> args = {"--log_file", dir + "/worker:" + std::to_string(index) + ".log"};
    if (task_verbose) args.push_back("--verbose");
    return args;
  };
  const bool stream_bar = !all && console->terminal();
  o->task_env = [stream_bar](int index) {
    std::vector<std::pair<std::string, std::string>> env;
    if (stream_bar && index == 0) env.emplace_back("RINGTRAIN_PROGRESS", "stream");
    return env;
  };
  return Status::Ok();
}

bool TakeShortVerbose(std::vector<std::string>* args) {
  bool found = false;
  for (auto it = args->begin(); it != args->end() && *it != "--";) {
    if (*it == "-v") {
      it = args->erase(it);
      found = true;
    } else {
      ++it;
    }
  }
  return found;
}

}  // namespace ringtrain::cli
