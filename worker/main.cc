// ringtrain: synchronous multi-worker training configured like TensorFlow's
// MultiWorkerMirroredStrategy. This file only dispatches to the subcommands.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "config/settings.h"
#include "kernels/impl.h"
#include "kernels/winograd.h"

namespace {

// The settings that hold for the whole process, whatever the command: the log level
// and the CPU kernels' choices (config::LoadProcessSettings).
void ApplyProcessSettings() {
  std::vector<std::string> warnings;
  const ringtrain::config::ProcessSettings p = ringtrain::config::LoadProcessSettings(&warnings);
  ringtrain::SetMinLogLevel(ringtrain::ParseLogLevel(p.log_level));
  if (p.kernels == "portable") ringtrain::kernels::SetForcePortable(true);
  ringtrain::kernels::SetConvAlgo(ringtrain::kernels::ParseConvAlgo(p.conv_algo));
  for (const std::string& w : warnings) RT_LOG(WARNING) << w;
}

const char kUsage[] =
    "usage: ringtrain <command> [flags]\n"
    "\n"
    "commands:\n"
    "  worker --job JOB.json [--tf_config FILE|JSON] [--cluster_resolver tf_config|slurm] [--base_port 8888]\n"
    "         [--metrics_port P]\n"
    "      run one task of a cluster described by TF_CONFIG (environment or --tf_config), or with\n"
    "      --cluster_resolver slurm by the srun step (task k on a node listens on base_port + k);\n"
    "      [--tls_cert F --tls_key F --tls_ca F]: mutual TLS for the coordination service. Beyond\n"
    "      loopback a cluster needs RINGTRAIN_CLUSTER_SECRET (or _FILE) on every task;\n"
    "      an \"evaluator\" task evaluates each checkpoint training writes [--eval_timeout_s S]\n"
    "      [--eval_history PATH]\n"
    "      [--log_file F [--verbose]]: every log line to F, only warnings and errors to stderr;\n"
    "      [--metrics_port P]: Prometheus /metrics on P (the chief also serves its live page at /)\n"
    "      [--host_tasks K]: this process runs TF_CONFIG's task and the K-1 training tasks after it\n"
    "  launch --workers N [--processes NP] --job JOB.json [--base_port P] [--grace_s S] [--max_restarts K]\n"
    "         [--metrics_port P] [-- worker flags]\n"
    "      start N local workers on loopback (in NP processes: the N-process model, bit for bit),\n"
    "      with their TF_CONFIG set; restart a failed worker up to K times.\n"
    "      [--output default|all] [-v] [--log_dir DIR]: by default the chief's\n"
    "      summary, progress bar and epoch lines and every task's warnings, each task's full log\n"
    "      in DIR/<task>.log (default: logs/ next to the job); all: every task's lines, prefixed;\n"
    "      worker i serves /metrics on port P+i\n"
    "  status [--tf_config FILE|JSON | --chief HOST:PORT] [--watch [--interval_s 2]] [--json]\n"
    "      how a running cluster is going, asked of its chief: every task (state, step, heartbeat,\n"
    "      step time split), the job's progress and ETA, stragglers and the last events\n"
    "  serve [--tf_config FILE|JSON] [--work_dir DIR] [--max_restarts 3] [--tls_cert F --tls_key F --tls_ca F]\n"
    "      a daemon of a standing cluster: join it and run the jobs submitted to the chief's daemon, one\n"
    "      at a time on every daemon (each in DIR/jobs/job-ID/); the chief's keeps the queue\n"
    "      (DIR/queue.json); SIGTERM: the running job saves its step, then the daemon leaves\n"
    "  submit JOB.json [--name N] | jobs [--json] | logs [-f] ID | cancel ID\n"
    "         [--chief HOST:PORT | --tf_config FILE|JSON]\n"
    "      send a job to the daemons' queue (prints its id); list the jobs; the chief's output of\n"
    "      one (-f: follow it to its end); cancel a queued or running job\n"
    "  bench allreduce [--workers N] [--backend auto|ring|tcp|nccl] [--min_bytes 4]\n"
    "                  [--max_bytes 67108864] [--iters 20] [--warmup 5] [--json] [--timeout_s 60]\n"
    "      all-reduce bandwidth and latency (nccl-tests' columns), every result checked: on N\n"
    "      local processes, or without --workers as one task of the TF_CONFIG cluster\n"
    "  bench train --job JOB.json [--workers 2] [--epochs E] [--warmup_epochs 1] [--device auto|cpu|gpu]\n"
    "      train the job on N local workers; print images/s, step time and the share of it\n"
    "      spent waiting on communication, warm-up epochs excluded\n"
    "  bench input [--images 2000] [--dir D] [--mnist DIR] [--batch 32] [--seconds 3]\n"
    "      decode a JPEG class folder (500x375, made from MNIST) to 224x224 RGB with ringtrain's\n"
    "      input pipeline and with PyTorch's DataLoader (/usr/bin/python3, torchvision) side by\n"
    "      side, 1 and 2 workers; and a TFRecord of raw MNIST examples on one core\n"
    "  data inspect JOB.json [--split train|eval] [--workers N] [--bench] [--threads N] [--seconds S] [--json]\n"
    "      what a data source holds: files, examples, classes and counts, shape, value range, and\n"
    "      each worker's shard under the job's sharding (--workers: default TF_CONFIG's cluster\n"
    "      size, else 1); --bench: decode speed on this machine\n"
    "  evaluate --job JOB.json --model M.safetensors [--data eval|train] [--batch_size N] [--json]\n"
    "      loss and accuracy of a saved model on a whole data split (default data.eval)\n"
    "  predict --job JOB.json --model M.safetensors [--data eval|train | --input X.npy|FOLDER]\n"
    "          [--first I] [--count N] [--batch_size N] [--output OUT.npy] [--json]\n"
    "      one line per example: index, predicted class, its probability, the label; --input runs\n"
    "      new examples (an .npy array, or a folder of images); --output writes the model's outputs\n"
    "      [n, units] as float32 .npy, as Keras' model.predict returns them\n"
    "  summary JOB.json | MODEL.json | MODEL.keras [--json]\n"
    "      Keras' model.summary() of the model a job file, a Keras model JSON or a compact model\n"
    "      describes: layers, output shapes, parameters, connections; no data is read\n"
    "  version, --version\n"
    "      the version and what this binary was built with (CUDA, cuDNN, NCCL, CPU kernels)\n"
    "  info [--json]\n"
    "      what this machine has at run time: CUDA driver, GPUs, loaded library versions, CPU,\n"
    "      and where \"device\": \"auto\" would put a worker\n"
    "  help        print this text\n"
    "\n"
    "exit codes: 0 ok, 1 internal error, 2 bad configuration, 3 bad data, 4 rendezvous failed,\n"
    "            5 a peer failed during training, 6 model/backup file error, 7 preempted (SIGTERM:\n"
    "            the step was saved; restart to resume) (docs/reference/exit-codes.md)\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? ringtrain::kExitBadConfig : ringtrain::kExitOk;
  }
  std::string command = args[0];
  args.erase(args.begin());
  ApplyProcessSettings();
  if (command == "version" || command == "--version") return ringtrain::cli::RunVersion(args);
  if (command == "info") return ringtrain::cli::RunInfo(args);
  if (command == "worker") return ringtrain::cli::RunWorker(args);
  if (command == "launch") return ringtrain::cli::RunLaunch(args, "/proc/self/exe");
  if (command == "status") return ringtrain::cli::RunStatus(args);
  if (command == "serve") return ringtrain::cli::RunServe(args, "/proc/self/exe");
  if (command == "submit" || command == "jobs" || command == "logs" || command == "cancel") {
    return ringtrain::cli::RunJobCommand(command, args);
  }
  if (command == "evaluate") return ringtrain::cli::RunEvaluate(args);
  if (command == "predict") return ringtrain::cli::RunPredict(args);
  if (command == "data") return ringtrain::cli::RunData(args);
  if (command == "summary") return ringtrain::cli::RunSummary(args);
  if (command == "bench") return ringtrain::cli::RunBench(args, "/proc/self/exe");
  ringtrain::cli::PrintError("unknown command '" + command + "'; run `ringtrain help`");
  return ringtrain::kExitBadConfig;
}
