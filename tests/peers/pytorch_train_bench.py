#!/usr/bin/env python3
# Usage: /usr/bin/python3 tests/peers/pytorch_train_bench.py --workload w1|w2|w3 --procs 1|2 [--epochs E]
#            [--seed 1] [--threads 1] [--device cpu|cuda]          (Debian: apt-get install python3-torch)
# Not part of the test suite: the PyTorch DDP peer of `ringtrain bench train` (issue 5's speed targets),
# driven side by side with it by tests/bench/train_bench.sh.
#
# N processes (torch.multiprocessing, fork) join a gloo process group on 127.0.0.1 and train the issue's
# workload with DistributedDataParallel, one intra-op thread each. Data as in ringtrain's jobs: MNIST test
# set examples 0..7999 train, 8000..9999 eval, pixels / 255; AUTO sharding (example i goes to rank i % N);
# each rank reads its shard as an endless stream, a fresh permutation from its own seeded generator per
# pass (tf.data's shuffle().repeat().batch()), 64 examples per rank per step. Each epoch is timed from
# barrier to barrier; rank 0 prints per-epoch images/s (global images / seconds) and a final line
#   RESULT workload=w1 procs=2 images_per_sec=<mean over epochs 2..E> step_ms=<mean> ...
# (the first epoch is warm-up and excluded, as in the issue).
#
# --device cuda (issue 6's GPU peer: PyTorch eager on the same GPU): the model and each rank's whole shard
# live on the GPU (so no per-step upload at all, the most favourable setting for PyTorch), processes > 1
# use the nccl backend, and each epoch ends with torch.cuda.synchronize() before its time is taken.
#
# pytorch_fidelity.py imports the models, data and shard streams from here, so both peers train the
# same thing.
import argparse, gzip, os, socket, statistics, sys, time

import numpy as np
import torch
import torch.nn as nn

# Where deploy/get_mnist.sh puts the MNIST test set (what deploy/jobs/mnist_w*.json read), else
# the copy beside the checkout.
_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
DATA_DIR = next((d for d in (os.path.join(_ROOT, "data/mnist"), os.path.join(_ROOT, "../shared/data/mnist"))
                 if os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz"))),
                os.path.join(_ROOT, "data/mnist"))
BATCH_PER_RANK = 64
TRAIN_FIRST, TRAIN_COUNT, EVAL_FIRST, EVAL_COUNT = 0, 8000, 8000, 2000


def keras_init(model):
    # Keras' defaults: Glorot-uniform kernels, zero biases. PyTorch's fan computation for a conv weight
    # (out, in, kh, kw) equals Keras' for (kh, kw, in, out), so xavier_uniform_ draws from the same range.
    for mod in model.modules():
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(mod.weight)
            nn.init.zeros_(mod.bias)
    return model


def build_w1():  # reshape -> conv2d(32, 3, relu) -> flatten -> dense(128, relu) -> dense(10)
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(32 * 26 * 26, 128), nn.ReLU(), nn.Linear(128, 10))


def build_w2():  # conv2d(32, 3, relu) -> max_pool 2 -> flatten -> dense(64, relu) -> dense(10)
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 13 * 13, 64), nn.ReLU(), nn.Linear(64, 10))


def build_w3():  # the custom-training-loop seed: conv32 -> pool -> conv64 -> pool -> dense 64 -> dense 10
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 10))


def sgd(params):
    return torch.optim.SGD(params, lr=0.001)


def adam(params):
    return torch.optim.Adam(params, lr=0.001, eps=1e-7)  # Keras' epsilon, not PyTorch's 1e-8


# name -> (model builder, optimizer, epochs, steps per epoch)
WORKLOADS = {
    "w1": (build_w1, sgd, 3, 70),
    "w2": (build_w2, adam, 6, 63),
    "w3": (build_w3, adam, 5, 62),
}


def load_mnist():
    """Returns (images float32 N x 1 x 28 x 28 in [0, 1], labels int64 N) of the whole 10,000-image file."""
    try:
        with gzip.open(os.path.join(DATA_DIR, "t10k-images-idx3-ubyte.gz")) as f:
            raw = f.read()
        with gzip.open(os.path.join(DATA_DIR, "t10k-labels-idx1-ubyte.gz")) as f:
            lab = f.read()
    except OSError as e:
        sys.exit(f"cannot read MNIST from {DATA_DIR} ({e}); it must hold t10k-images-idx3-ubyte.gz and "
                 "t10k-labels-idx1-ubyte.gz")
    x = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 1, 28, 28) / np.float32(255)
    y = np.frombuffer(lab, np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)), torch.from_numpy(y)


class ShardStream:
    """Endless batches of one rank's AUTO shard: example i of the split belongs to rank i % procs.
    Each pass over the shard is a fresh permutation from the rank's own generator; a batch that
    reaches the end of a pass continues into the next."""

    def __init__(self, x, y, rank, procs, seed, device="cpu"):
        idx = torch.arange(rank, x.shape[0], procs)
        self.x, self.y = x[idx].contiguous().to(device), y[idx].contiguous().to(device)
        self.gen = torch.Generator().manual_seed(seed * 1000003 + rank)
        self.order, self.pos = torch.randperm(self.x.shape[0], generator=self.gen), 0

    def next(self, batch):
        parts, need, n = [], batch, self.x.shape[0]
        while need > 0:
            take = min(need, n - self.pos)
            parts.append(self.order[self.pos:self.pos + take])
            self.pos += take
            need -= take
            if self.pos == n:
                self.order, self.pos = torch.randperm(n, generator=self.gen), 0
        sel = torch.cat(parts).to(self.x.device)
        return self.x[sel], self.y[sel]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(rank, args, port):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(args.threads)
    n = args.procs
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    backend = "nccl" if cuda and n > 1 else "gloo"
    dist.init_process_group(backend, rank=rank, world_size=n)
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    build, make_opt, _, steps = WORKLOADS[args.workload]
    x, y = load_mnist()
    stream = ShardStream(x[TRAIN_FIRST:TRAIN_FIRST + TRAIN_COUNT], y[TRAIN_FIRST:TRAIN_FIRST + TRAIN_COUNT],
                         rank, n, args.seed, device)
    torch.manual_seed(args.seed)
    # DDP also broadcasts rank 0's parameters
    model = DDP(keras_init(build()).to(device), device_ids=[device.index] if cuda else None)
    opt = make_opt(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    images = steps * BATCH_PER_RANK * n
    if rank == 0:
        where = torch.cuda.get_device_name(device) if cuda else "CPU"
        print(f"# torch {torch.__version__} DDP {backend} on {where}: workload {args.workload}, {n} process(es) x "
              f"{args.threads} thread(s), batch {BATCH_PER_RANK} per process, {args.epochs} epochs x {steps} "
              f"steps ({images} images per epoch)", flush=True)
    rates, step_ms = [], []
    dist.barrier()
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), dtype=torch.int64, device=device)
        for _ in range(steps):
            xb, yb = stream.next(BATCH_PER_RANK)
            logits = model(xb)
            loss = loss_fn(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
            correct += (logits.detach().argmax(1) == yb).sum()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        sec = time.perf_counter() - t0
        rates.append(images / sec)
        step_ms.append(sec * 1e3 / steps)
        if rank == 0:  # rank 0's own shard metrics: a sanity check, not the global figures
            print(f"epoch {epoch + 1}/{args.epochs}: {sec:.3f} s, images_per_sec={rates[-1]:.1f} "
                  f"step_ms={step_ms[-1]:.3f} rank0_loss={float(loss_sum) / steps:.4f} "
                  f"rank0_accuracy={int(correct) / (steps * BATCH_PER_RANK):.4f}", flush=True)
    if rank == 0:
        timed = slice(1, None) if args.epochs > 1 else slice(0, None)
        if args.epochs == 1:
            print("# warning: only one epoch, so the warm-up epoch is in the mean", flush=True)
        print(f"RESULT workload={args.workload} procs={n} images_per_sec={statistics.mean(rates[timed]):.1f} "
              f"step_ms={statistics.mean(step_ms[timed]):.3f} epochs={args.epochs} steps_per_epoch={steps} "
              f"batch_per_proc={BATCH_PER_RANK} threads={args.threads} device={args.device}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description="PyTorch DDP (gloo) training-speed peer of `ringtrain bench train`")
    p.add_argument("--workload", choices=sorted(WORKLOADS), required=True)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=None, help="default: the workload's (w1 3, w2 6, w3 5)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads per process")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = p.parse_args()
    if args.procs < 1 or args.threads < 1:
        p.error("--procs and --threads must be at least 1")
    if args.epochs is None:
        args.epochs = WORKLOADS[args.workload][2]
    if args.epochs < 1:
        p.error("--epochs must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch.cuda.is_available() is False (no GPU or no CUDA build of PyTorch)")
    # torch.multiprocessing reports a child's exception and exits non-zero.
    import torch.multiprocessing as mp
    mp.start_processes(run, args=(args, free_port()), nprocs=args.procs, start_method="fork")


if __name__ == "__main__":
    main()
