#!/usr/bin/env python3
"""`ringtrain serve` benchmarks, two daemons on loopback.

first-step: from `ringtrain submit` to the job's first completed training step on a warm
  2-daemon cluster, against `ringtrain launch --workers 2` of the same job from cold (exec
  to the first step). The job is the seed demo job (deploy/jobs/demo.json) with one step
  per epoch, so its "Epoch 1/..." line follows the first step; the time is taken when
  that line appears in the chief's output.
many: N small jobs submitted back to back, the chief daemon SIGKILLed and restarted
  `--kills` times during the queue; every job must finish, started at most twice, with
  the model bytes `launch` gives it.

usage: daemon_bench.py --binary build2/bin/ringtrain [--trials 5] [--many 100 --kills 2]
"""
import argparse, json, os, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recovery_bench import free_ports, tf_config  # noqa: E402  (the same loopback cluster helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = "daemon-bench-secret-0123456789abcdef"


class Cluster:
    def __init__(self, binary, tmp):
        self.binary, self.tmp = binary, tmp
        self.ports = free_ports(2)
        self.procs = [None, None]
        for i in range(2):
            self.start(i)
        self.wait_chief()

    def env(self, i):
        e = dict(os.environ, TF_CONFIG=tf_config(self.ports, i), RINGTRAIN_CLUSTER_SECRET=SECRET,
                 RINGTRAIN_NUM_THREADS="1", RINGTRAIN_PROGRESS="lines",
                 RINGTRAIN_HEARTBEAT_INTERVAL_MS="200", RINGTRAIN_HEARTBEAT_TIMEOUT_MS="2000")
        return e

    def start(self, i):
        self.procs[i] = subprocess.Popen(
            [self.binary, "serve", "--work_dir", f"{self.tmp}/work{i}", "--log_file", f"{self.tmp}/daemon{i}.log"],
            env=self.env(i), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def client(self, *args):
        r = subprocess.run([self.binary, *args, "--chief", f"127.0.0.1:{self.ports[0]}"],
                           env=dict(os.environ, RINGTRAIN_CLUSTER_SECRET=SECRET), capture_output=True, text=True)
        return r

    def wait_chief(self):
        for _ in range(200):
            if self.client("jobs").returncode == 0:
                return
            time.sleep(0.05)
        raise SystemExit("the chief daemon did not answer")

    def jobs(self):
        r = self.client("jobs", "--json")
        return {j["id"]: j for j in json.loads(r.stdout)["jobs"]} if r.returncode == 0 else None

    def submit(self, path):
        r = self.client("submit", path)
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        return int(r.stdout.strip())

    def output(self, job_id):
        try:
            with open(f"{self.tmp}/work0/jobs/job-{job_id}/output.log") as f:
                return f.read()
        except OSError:
            return ""

    def wait_done(self, ids, timeout=600):
        end = time.time() + timeout
        while time.time() < end:
            j = self.jobs()
            if j and all(j.get(i, {}).get("state") in ("finished", "failed", "cancelled") for i in ids):
                return j
            time.sleep(0.1)
        raise SystemExit("jobs not over: %s" % self.jobs())

    def stop(self):
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            p.wait(60)


def seed_job(path, save, steps_per_epoch=1):
    job = json.load(open(os.path.join(ROOT, "deploy/jobs/demo.json")))
    job["steps_per_epoch"] = steps_per_epoch
    job["save_model"] = save
    job.pop("history_file", None)
    with open(path, "w") as f:
        json.dump(job, f)
    return path


def first_step(args, tmp):
    c = Cluster(args.binary, tmp)
    job = seed_job(f"{tmp}/seed.json", "model.safetensors")
    c.wait_done([c.submit(job)])  # warm: the binary and the data in the OS caches
    daemon_s, launch_s = [], []
    for t in range(args.trials):
        t0 = time.time()
        jid = c.submit(job)
        while "Epoch 1/" not in c.output(jid):
            time.sleep(0.002)
        daemon_s.append(time.time() - t0)
        c.wait_done([jid])
        ljob = seed_job(f"{tmp}/launch{t}.json", f"{tmp}/launch{t}.safetensors")
        t0 = time.time()
        p = subprocess.Popen([args.binary, "launch", "--workers", "2", "--job", ljob],
                             env=dict(os.environ, RINGTRAIN_NUM_THREADS="1", RINGTRAIN_PROGRESS="lines"),
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in p.stdout:
            if "Epoch 1/" in line:
                launch_s.append(time.time() - t0)
                break
        p.stdout.read()
        p.wait(120)
    c.stop()
    print("submit to first step, warm 2-daemon cluster: median %.3f s (min %.3f, max %.3f; %d trials)" %
          (statistics.median(daemon_s), min(daemon_s), max(daemon_s), len(daemon_s)))
    print("launch --workers 2 to first step, cold:     median %.3f s (min %.3f, max %.3f; %d trials)" %
          (statistics.median(launch_s), min(launch_s), max(launch_s), len(launch_s)))


def many(args, tmp):
    seeds = 5
    reference = {}
    for s in range(seeds):  # what launch gives each distinct job
        job = json.load(open(os.path.join(ROOT, "deploy/jobs/demo.json")))
        job.update({"seed": 100 + s, "epochs": 1, "steps_per_epoch": 4, "save_model": f"{tmp}/ref{s}.safetensors"})
        job.pop("history_file", None)
        json.dump(job, open(f"{tmp}/ref{s}.json", "w"))
        subprocess.run([args.binary, "launch", "--workers", "2", "--job", f"{tmp}/ref{s}.json"], check=True,
                       env=dict(os.environ, RINGTRAIN_NUM_THREADS="1"), stdout=subprocess.DEVNULL)
        reference[s] = open(f"{tmp}/ref{s}.safetensors", "rb").read()
    c = Cluster(args.binary, tmp)
    t0 = time.time()
    ids = []
    for k in range(args.many):
        job = json.load(open(f"{tmp}/ref{k % seeds}.json"))
        job["save_model"] = "model.safetensors"
        job["backup_and_restore"] = {"backup_dir": "backup", "save_freq": 2}
        path = f"{tmp}/q{k}.json"
        json.dump(job, open(path, "w"))
        ids.append(c.submit(path))
    submitted = time.time() - t0
    kills = 0
    while True:
        j = c.jobs() or {}
        done = sum(1 for i in ids if j.get(i, {}).get("state") in ("finished", "failed", "cancelled"))
        if done == len(ids):
            break
        if kills < args.kills and done >= (kills + 1) * len(ids) // (args.kills + 1):
            c.procs[0].send_signal(signal.SIGKILL)
            c.procs[0].wait()
            c.start(0)
            c.wait_chief()
            kills += 1
            print("chief daemon SIGKILLed and restarted after %d jobs were over" % done, flush=True)
        time.sleep(0.05)
    total = time.time() - t0
    j = c.jobs()
    states = {}
    for i in ids:
        states[j[i]["state"]] = states.get(j[i]["state"], 0) + 1
    same = sum(1 for k, i in enumerate(ids)
               if open(f"{tmp}/work0/jobs/job-{i}/model.safetensors", "rb").read() == reference[k % seeds])
    attempts = {}
    for i in ids:
        attempts[j[i]["attempts"]] = attempts.get(j[i]["attempts"], 0) + 1
    c.stop()
    print("%d jobs submitted in %.2f s; all over in %.1f s (%.2f s per job) with %d chief daemon kills" %
          (len(ids), submitted, total, total / len(ids), kills))
    print("states: %s; model bytes equal to launch's: %d of %d; jobs by attempts: %s" %
          (states, same, len(ids), attempts))
    return 0 if states.get("finished") == len(ids) and same == len(ids) else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--many", type=int, default=0)
    ap.add_argument("--kills", type=int, default=2)
    args = ap.parse_args()
    args.binary = os.path.abspath(args.binary)
    with tempfile.TemporaryDirectory() as tmp:
        if args.many:
            return many(args, tmp)
        first_step(args, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
