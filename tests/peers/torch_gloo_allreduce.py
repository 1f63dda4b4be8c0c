#!/usr/bin/env python3
# Usage: /usr/bin/python3 tests/peers/torch_gloo_allreduce.py [--procs 2] [--min_bytes 4]
#            [--max_bytes 67108864] [--iters 20] [--warmup 5]        (Debian: apt-get install python3-torch)
# Not part of the test suite: the torch.distributed gloo peer of `ringtrain bench allreduce`.
# N processes (torch.multiprocessing) on loopback, float32 sum, the same size schedule
# (x4 from min to max); each op timed alone (perf_counter, no barrier), the median over
# the timed ops on rank 0 reported; every result checked outside the timed region.
# Prints the bench's columns: bytes time_us algbw_GBps busbw_GBps.
import argparse, os, socket, statistics, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sizes(lo, hi):
    b = lo
    while b <= hi:
        yield b
        b *= 4


def run(rank, args, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    n = args.procs
    dist.init_process_group("gloo", rank=rank, world_size=n)
    buf = torch.empty(args.max_bytes // 4, dtype=torch.float32)
    expected = float(n * (n + 1) // 2)
    if rank == 0:
        print(f"# torch {torch.__version__} distributed gloo all_reduce: {n} processes, float32 sum, "
              f"{args.iters} timed + {args.warmup} warm-up ops per size, median of rank 0's per-op times")
        print(f"#{'bytes':>11}  {'time_us':>12}  {'algbw_GBps':>12}  {'busbw_GBps':>12}", flush=True)
    for b in sizes(args.min_bytes, args.max_bytes):
        t = buf[: b // 4]
        times = []
        for it in range(args.warmup + args.iters):
            t.fill_(rank + 1)
            t0 = time.perf_counter()
            dist.all_reduce(t)
            t1 = time.perf_counter()
            if not bool((t == expected).all()):
                bad = int((t != expected).nonzero()[0])
                sys.exit(f"torch gloo: wrong result at {b} bytes: element {bad} is {float(t[bad])}, expected {expected}")
            if it >= args.warmup:
                times.append((t1 - t0) * 1e6)
        us = statistics.median(times)
        algbw = b / us / 1e3
        if rank == 0:
            print(f"{b:12d}  {us:12.2f}  {algbw:12.3f}  {algbw * 2 * (n - 1) / n:12.3f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--min_bytes", type=int, default=4)
    p.add_argument("--max_bytes", type=int, default=64 << 20)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    mp.start_processes(run, args=(args, free_port()), nprocs=args.procs, start_method="fork")


if __name__ == "__main__":
    main()
