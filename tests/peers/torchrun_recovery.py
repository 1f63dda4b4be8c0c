#!/usr/bin/env python3
"""Peer for the recovery-time benchmark: PyTorch 1.13's torchrun (torch.distributed.elastic).

Usage (Debian: apt-get install python3-torch; run with /usr/bin/python3):
  /usr/bin/python3 tests/peers/torchrun_recovery.py --trials 10 [--victim 1] [--monitor_interval 5]

Runs `torchrun --standalone --nproc_per_node 2 --max_restarts N` with DDP (gloo) training the seed
tutorial's model on the same MNIST split (batch 64 per worker), checkpointing every epoch as torch's
elastic examples do (rank 0 saves; every rank loads on start). Then, repeatedly, SIGKILLs one worker
process and measures the time from the kill to the next training step completed by every worker --
ringtrain's recovery_bench.py measures the same. torchrun restarts the whole worker group on any
failure; it notices the failure at its next monitor poll (--monitor_interval, default 5 s).
"""
import argparse, gzip, os, queue, random, signal, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(ckpt):
    import numpy as np, torch, torch.nn as nn, torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print("rank %d pid %d" % (rank, os.getpid()), flush=True)
    r = os.path.join(HERE, "../../")  # data/mnist: deploy/get_mnist.sh
    d = next((p for p in (r + "data/mnist/", r + "../shared/data/mnist/") if os.path.exists(p)), r + "data/mnist/")
    x = np.frombuffer(gzip.open(d + "t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    y = np.frombuffer(gzip.open(d + "t10k-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
    x = torch.tensor(x[rank:8000:world] / np.float32(255)); y = torch.tensor(y[rank:8000:world].astype(np.int64))
    torch.manual_seed(1)
    m = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(), nn.Linear(21632, 128), nn.ReLU(), nn.Linear(128, 10))
    model = nn.parallel.DistributedDataParallel(m)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    epoch = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        m.load_state_dict(state["model"]); opt.load_state_dict(state["opt"]); epoch = state["epoch"]
    first = True
    while True:
        g = torch.Generator().manual_seed(epoch * 1000 + rank)
        order = torch.randperm(len(y), generator=g)
        for step in range(70):
            idx = order[(step * 64) % (len(y) - 64):][:64]
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(); loss.backward(); opt.step()
            if first:
                print("rank %d step completed at %.6f" % (rank, time.time()), flush=True)
                first = False
        epoch += 1
        if rank == 0:
            torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "epoch": epoch}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--victim", type=int, default=1)
    ap.add_argument("--monitor_interval", type=float, default=5)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ckpt = os.path.join(tempfile.mkdtemp(prefix="torchrun-recovery-"), "ckpt.pt")
    # --redirects/--tee as mappings: Debian's torch 1.13 on Python 3.11 cannot parse "0" (Std.NONE). The
    # workers stamp their lines with the wall clock, so tee's polling adds nothing to the measurement.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "--redirects", "0:1,1:1", "--tee", "0:1,1:1",
           "--max_restarts", str(args.trials + 5), "--monitor_interval", str(args.monitor_interval),
           os.path.abspath(__file__), "--worker", ckpt]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    events = queue.Queue()

    def read():
        for line in proc.stdout:
            events.put((time.monotonic(), line.rstrip()))
    threading.Thread(target=read, daemon=True).start()

    pids = {}

    def wait_steps(after, timeout=300):
        pending, last = {0, 1}, after
        end = time.monotonic() + timeout
        while pending:
            t, line = events.get(timeout=max(0.01, end - time.monotonic()))
            if "]:" in line:
                line = line.split("]:", 1)[1]  # tee's "[default0]:" prefix
            parts = line.split()
            if len(parts) >= 4 and parts[0] == "rank" and parts[2] == "pid":
                pids[int(parts[1])] = int(parts[3])
            if len(parts) == 6 and parts[2:5] == ["step", "completed", "at"] and float(parts[5]) >= after:
                pending.discard(int(parts[1])); last = max(last, float(parts[5]))
        return last

    times = []
    try:
        wait_steps(time.time() - 3600)
        for trial in range(args.trials):
            time.sleep(rng.uniform(1.0, 3.0))
            t0 = time.time()
            os.kill(pids[args.victim], signal.SIGKILL)
            done = wait_steps(t0)
            times.append(done - t0)
            print("trial %2d: kill rank %d -> next step on every worker: %.3f s" % (trial + 1, args.victim, done - t0),
                  flush=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    print("torchrun (monitor_interval %.1f s), victim rank %d, trials %d: median %.3f s, min %.3f s, max %.3f s" %
          (args.monitor_interval, args.victim, len(times), statistics.median(times), min(times), max(times)))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
