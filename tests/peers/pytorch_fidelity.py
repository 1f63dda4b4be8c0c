#!/usr/bin/env python3
# Usage: /usr/bin/python3 tests/peers/pytorch_fidelity.py --workload w1|w2|w3 [--procs 2] [--seed 1]
#            [--epochs E] [--threads 1]                             (Debian: apt-get install python3-torch)
# Not part of the test suite: the PyTorch peer behind the fidelity figures.
#
# Trains the workload as `procs` synchronous workers would (data, models, shard streams and seeds from
# pytorch_train_bench.py, so the same run as its DDP), but in one process: each step takes 64 examples
# from every worker's shard stream and steps on the gradient of the mean loss over the global batch of
# procs x 64. With equal per-worker batches that is exactly DDP's average of per-worker mean gradients.
# Prints Keras-like fit lines (loss = mean of the epoch's global-batch losses, accuracy over the epoch's
# examples), then evaluate on examples 8000..9999, then one machine-readable line:
#   FIDELITY workload=w1 procs=2 seed=1 loss=a,b,c accuracy=a,b,c eval_loss=x eval_accuracy=y
import argparse, os, sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_train_bench import (BATCH_PER_RANK, EVAL_COUNT, EVAL_FIRST, TRAIN_COUNT, TRAIN_FIRST, WORKLOADS,
                                 ShardStream, keras_init, load_mnist)


def evaluate(model, x, y, batch=500):
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            logits = model(x[i:i + batch])
            loss_sum += nn.functional.cross_entropy(logits, y[i:i + batch], reduction="sum").item()
            correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return loss_sum / x.shape[0], correct / x.shape[0]


def main():
    p = argparse.ArgumentParser(description="PyTorch fidelity peer for ringtrain's W1/W2/W3 training")
    p.add_argument("--workload", choices=["w1", "w2", "w3"], required=True)  # the MNIST workloads
    p.add_argument("--procs", type=int, default=2, help="workers emulated (global batch = procs x 64)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--epochs", type=int, default=None, help="default: the workload's (w1 3, w2 6, w3 5)")
    p.add_argument("--steps", type=int, default=None, help="steps per epoch; default the workload's (70, 63, 62)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    build, make_opt, epochs, steps = WORKLOADS[args.workload][:4]
    epochs = args.epochs if args.epochs is not None else epochs
    steps = args.steps if args.steps is not None else steps
    if args.procs < 1 or epochs < 1 or steps < 1 or args.threads < 1:
        p.error("--procs, --epochs, --steps and --threads must be at least 1")
    torch.set_num_threads(args.threads)

    x, y = load_mnist()
    xt, yt = x[TRAIN_FIRST:TRAIN_FIRST + TRAIN_COUNT], y[TRAIN_FIRST:TRAIN_FIRST + TRAIN_COUNT]
    xe, ye = x[EVAL_FIRST:EVAL_FIRST + EVAL_COUNT], y[EVAL_FIRST:EVAL_FIRST + EVAL_COUNT]
    streams = [ShardStream(xt, yt, r, args.procs, args.seed) for r in range(args.procs)]
    torch.manual_seed(args.seed)
    model = keras_init(build())
    opt = make_opt(model.parameters())
    print(f"# torch {torch.__version__}: workload {args.workload}, {args.procs} worker(s) emulated in one process, "
          f"global batch {args.procs * BATCH_PER_RANK}, {epochs} epochs x {steps} steps, seed {args.seed}",
          flush=True)

    losses, accs = [], []
    for epoch in range(epochs):
        loss_sum, correct = 0.0, 0
        for _ in range(steps):
            parts = [s.next(BATCH_PER_RANK) for s in streams]
            xb, yb = torch.cat([q[0] for q in parts]), torch.cat([q[1] for q in parts])
            logits = model(xb)
            loss = nn.functional.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            correct += (logits.detach().argmax(1) == yb).sum().item()
        losses.append(loss_sum / steps)
        accs.append(correct / (steps * yb.shape[0]))
        print(f"Epoch {epoch + 1}/{epochs}\n{steps}/{steps} - loss: {losses[-1]:.4f} - accuracy: {accs[-1]:.4f}",
              flush=True)
    eval_loss, eval_acc = evaluate(model, xe, ye)
    print(f"evaluate: {EVAL_COUNT} examples - loss: {eval_loss:.4f} - accuracy: {eval_acc:.4f}")
    print(f"FIDELITY workload={args.workload} procs={args.procs} seed={args.seed} "
          f"loss={','.join('%.4f' % v for v in losses)} accuracy={','.join('%.4f' % v for v in accs)} "
          f"eval_loss={eval_loss:.4f} eval_accuracy={eval_acc:.4f}", flush=True)


if __name__ == "__main__":
    main()
