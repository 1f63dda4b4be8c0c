// Builds TF_CONFIG from a Slurm job step, as TensorFlow's SlurmClusterResolver does, so
// `srun ringtrain worker --cluster_resolver slurm` needs no hand-written cluster. Every
// task of the step is a worker; worker 0 (rank 0, the first task on the first node) is
// the chief. Tasks are laid out node by node (Slurm's block distribution): the first
// node holds ranks 0..t0-1, the next t0..t0+t1-1, and so on. The k-th task on a node
// listens on base_port + k.
//
// Pure functions over their arguments: the environment comes in as a map, so tests
// need no setenv. Nothing here blocks; every function may be called from any thread.
// Every error is an INVALID_ARGUMENT, one line, naming the variable and its text.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/tf_config.h"

namespace ringtrain::config {

// Slurm variables by name ("SLURM_PROCID" -> "3"). A name that is absent is unset.
using SlurmEnvironment = std::map<std::string, std::string>;

// The variables the resolver reads, in the order it prefers them (step-level first).
const std::vector<std::string>& SlurmVariableNames();

// The values of SlurmVariableNames() that are set in this process's environment.
SlurmEnvironment SlurmEnvironmentFromProcess();

// Expands a Slurm hostlist: "n[1-3],m5" -> n1 n2 n3 m5. Zero padding is kept
// ("node[01-03]" -> node01 node02 node03; the width is the lower bound's), a bracket
// may hold a list ("a[1,3-4]b" -> a1b a3b a4b), and several bracket groups multiply
// ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). Commas separate names only outside brackets.
// `what` names the source (e.g. the variable) in error messages.
StatusOr<std::vector<std::string>> ExpandSlurmHostlist(const std::string& text, const std::string& what);

// Expands Slurm's tasks-per-node form: "3(x2),2" -> 3 3 2; "2,2"; "4". Every count is >= 1.
StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(const std::string& text, const std::string& what);

// The cluster of a Slurm step.
struct SlurmCluster {
  std::vector<HostPort> workers;  // in rank order
  int task_index = 0;             // this task's rank (SLURM_PROCID)
  int num_nodes = 0;
  // {"cluster": {"worker": [...]}, "task": {"type": "worker", "index": task_index}}
  std::string ToTfConfigText() const;
};

// Reads SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), SLURM_STEP_NODELIST
// (else SLURM_JOB_NODELIST) and SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE)
// from `env`. The node list and the per-node counts must have the same length and the
// counts must sum to the task count; every port must stay within 1..65535. When
// SLURMD_NODENAME or SLURM_LOCALID is set, it must agree with the block layout (a task
// started with --distribution=cyclic is refused rather than given a wrong address).
StatusOr<SlurmCluster> ResolveSlurmCluster(const SlurmEnvironment& env, int base_port);

// ResolveSlurmCluster(...)->ToTfConfigText(): what ParseTfConfig takes.
StatusOr<std::string> SlurmTfConfigText(const SlurmEnvironment& env, int base_port);

}  // namespace ringtrain::config
