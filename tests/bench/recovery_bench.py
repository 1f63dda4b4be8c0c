#!/usr/bin/env python3
"""Recovery-time benchmark (a benchmark, not a test).

Starts N `ringtrain worker` processes on loopback with default settings, training
the seed MNIST job (deploy/jobs/mnist_w1.json, made long) with BackupAndRestore.
Then, repeatedly: waits a random 1-3 s, SIGKILLs one task, restarts it at once with
the same TF_CONFIG, and measures the time from the SIGKILL to the next completed
training step on every worker (each prints "step S completed" when its first step
after (re)joining is done). Prints each trial and the median.

  python3 tests/bench/recovery_bench.py --workers 2 --victim 1 --trials 10
  python3 tests/bench/recovery_bench.py --workers 2 --victim 0 --trials 10   # the chief

With --elastic the job is elastic ({"min_workers": N-1, "wait_s": 0}) and the
killed task is not restarted: the time is from the SIGKILL to the next completed step on
every survivor, with the lost task's virtual rank hosted by one of them. Then the task is
started again (it takes its rank back) before the next trial.

  python3 tests/bench/recovery_bench.py --workers 3 --victim 2 --trials 10 --elastic
"""
import argparse
import json
import os
import queue
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def tf_config(ports, index):
    return json.dumps({"cluster": {"worker": ["127.0.0.1:%d" % p for p in ports]},
                       "task": {"type": "worker", "index": index}})


class Task:
    """One worker process; its output lines go to a shared queue as (time, index, line)."""

    def __init__(self, binary, job, ports, index, events, log):
        env = dict(os.environ, TF_CONFIG=tf_config(ports, index), RINGTRAIN_PROGRESS="lines")
        self.index = index
        self.proc = subprocess.Popen([binary, "worker", "--job", job], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, args=(events, log), daemon=True)
        self.thread.start()

    def _read(self, events, log):
        for line in self.proc.stdout:
            events.put((time.monotonic(), self.index, line.rstrip()))
            log.write("[%d] %s\n" % (self.index, line.rstrip()))


def wait_for_steps(events, indices, after, timeout):
    """Waits until every task in `indices` printed 'step S completed' after `after`."""
    pending = set(indices)
    last = after
    deadline = time.monotonic() + timeout
    while pending:
        try:
            t, i, line = events.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise RuntimeError("tasks %s did not complete a step within %d s" % (sorted(pending), timeout))
        if t >= after and i in pending and line.endswith(" completed") and "] step " in line:
            pending.discard(i)
            last = max(last, t)
    return last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "ringtrain"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--victim", type=int, default=1, help="the task index to kill (0 = the chief)")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--elastic", action="store_true", help="elastic job; the victim is not restarted")
    args = ap.parse_args()
    rng = random.Random(args.seed)

    # The MNIST job reads data/mnist in the checkout.
    subprocess.run([os.path.join(ROOT, "deploy", "get_mnist.sh")], check=True, stdout=subprocess.DEVNULL)
    tmp = tempfile.mkdtemp(prefix="ringtrain-recovery-")
    with open(os.path.join(ROOT, "deploy", "jobs", "mnist_w1.json")) as f:
        job = json.load(f)
    base = os.path.join(ROOT, "deploy", "jobs")
    for split in ("train", "eval"):
        src = job["data"].get(split)
        if src:
            for k in ("images", "labels"):
                if k in src and not os.path.isabs(src[k]):
                    src[k] = os.path.normpath(os.path.join(base, src[k]))
    job["epochs"] = 100000
    job.pop("save_model", None)
    job.pop("history_file", None)
    job["backup_and_restore"] = {"backup_dir": os.path.join(tmp, "backup"), "save_freq": "epoch"}
    if args.elastic:
        job["elastic"] = {"min_workers": max(1, args.workers - 1), "wait_s": 0}
    job_path = os.path.join(tmp, "job.json")
    with open(job_path, "w") as f:
        json.dump(job, f)

    ports = free_ports(args.workers)
    events = queue.Queue()
    log = open(os.path.join(tmp, "workers.log"), "w")
    tasks = [Task(args.binary, job_path, ports, i, events, log) for i in range(args.workers)]
    times = []
    try:
        wait_for_steps(events, range(args.workers), 0, 300)
        for trial in range(args.trials):
            time.sleep(rng.uniform(1.0, 3.0))
            victim = tasks[args.victim]
            t0 = time.monotonic()
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            survivors = [i for i in range(args.workers) if not args.elastic or i != args.victim]
            if not args.elastic:
                tasks[args.victim] = Task(args.binary, job_path, ports, args.victim, events, log)
            done = wait_for_steps(events, survivors, t0, 120)
            if args.elastic:  # it comes back and takes its rank back before the next trial
                tasks[args.victim] = Task(args.binary, job_path, ports, args.victim, events, log)
                wait_for_steps(events, range(args.workers), time.monotonic(), 120)
            times.append(done - t0)
            print("trial %2d: kill %s -> next step on every %s: %.3f s" %
                  (trial + 1, "chief (worker:0)" if args.victim == 0 else "worker:%d" % args.victim,
                   "survivor" if args.elastic else "worker", done - t0))
            sys.stdout.flush()
    finally:
        for t in tasks:
            t.proc.send_signal(signal.SIGKILL)
            t.proc.wait()
        log.close()
    print("workers %d, victim %d, trials %d: median %.3f s, min %.3f s, max %.3f s (log: %s)" %
          (args.workers, args.victim, len(times), statistics.median(times), min(times), max(times),
           os.path.join(tmp, "workers.log")))


if __name__ == "__main__":
    main()
