#!/usr/bin/env python3
# Usage: python3 tests/bench/gpu_demo_curve.py [--ringtrain build/bin/ringtrain] [--job deploy/jobs/demo.json]
#                                              [--workers 2] [--implementation RING] [--tolerance 0.01]
#                                              [--epochs N] [--steps_per_epoch N] [--gpu_twice] [--cpu_spread]
# Not part of the test suite (it needs a GPU): a check that a job (by default the two-worker demo on one
# shared GPU over RING) follows the same curve on the GPU as on the CPU. It runs the job twice through `ringtrain
# launch`, once with "device": "cpu" and once with "device": "gpu" (the GPU run with the given communication
# implementation, the CPU run with RING), and compares the epochs' loss and accuracy from the two history files. Exit 0 when every epoch's loss agrees within the relative
# tolerance, 1 when not, 2 when a run fails. With --gpu_twice the GPU run is repeated, and the two must give the same
# loss values and model bytes. With --cpu_spread the job also runs on the CPU's portable kernels, whose sums run in
# other orders than its AVX-512 ones: in a chaotic job (ResNet-20 at rate 0.1 on random labels) the CPU differs from
# itself by percents, and the GPU is then held to four times that spread.
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(ringtrain, job_file, workers, device, implementation, tmp, save_dir=None, overrides=None, tag=None, env=None):
    """Trains the job on the device; returns (its epochs' history records, the saved model's path)."""
    with open(job_file) as f:
        job = json.load(f)
    job.update(overrides or {})
    tag = tag or device
    history = os.path.join(tmp, f"history-{tag}.jsonl")
    name = os.path.splitext(os.path.basename(job_file))[0]
    model = os.path.abspath(os.path.join(save_dir or tmp, f"{name}-{tag}.safetensors"))
    job.update({"device": device, "history_file": history, "save_model": model})
    job["communication"] = {"implementation": implementation}
    # Beside the original, so that its relative data paths still resolve.
    path = os.path.join(os.path.dirname(job_file), f".gpu-curve-{os.getpid()}-{tag}.json")
    with open(path, "w") as f:
        json.dump(job, f)
    try:
        p = subprocess.run([ringtrain, "launch", "--workers", str(workers), "--job", path], capture_output=True, text=True,
                           timeout=900, env=dict(os.environ, **(env or {})))
    finally:
        os.remove(path)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        sys.exit(f"gpu_demo_curve: the {device} run failed with exit code {p.returncode}")
    device_lines = [l for l in (p.stdout + p.stderr).splitlines() if "device" in l and ("GPU" in l or "CPU" in l)]
    for l in device_lines[:workers]:
        print(f"  [{device}] {l.strip()}")
    with open(history) as f:
        # The epochs' records (the file may end with others, e.g. the final evaluation's).
        return [r for r in (json.loads(l) for l in f if l.strip()) if "epoch" in r and "loss" in r], model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ringtrain", default=os.path.join(ROOT, "build/bin/ringtrain"))
    ap.add_argument("--job", default=os.path.join(ROOT, "deploy/jobs/demo.json"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--implementation", default="RING", choices=["RING", "NCCL", "AUTO"])
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--save_dir", help="keep the two saved models there as <job>-cpu/gpu.safetensors")
    ap.add_argument("--epochs", type=int, help="override the job's epochs (a shorter curve)")
    ap.add_argument("--steps_per_epoch", type=int, help="override the job's steps_per_epoch")
    ap.add_argument("--cpu_spread", action="store_true",
                    help="also train on the CPU with its portable kernels (RINGTRAIN_KERNELS=portable): the CPU's own "
                         "spread; the GPU then passes within max(tolerance, 4 x that spread)")
    ap.add_argument("--gpu_twice", action="store_true",
                    help="train on the GPU a second time and require the same model bytes and history (determinism)")
    a = ap.parse_args()
    overrides = {k: v for k, v in (("epochs", a.epochs), ("steps_per_epoch", a.steps_per_epoch)) if v}
    with tempfile.TemporaryDirectory() as tmp:
        job = os.path.abspath(a.job)
        if a.save_dir:
            os.makedirs(a.save_dir, exist_ok=True)
        cpu, _ = run(a.ringtrain, job, a.workers, "cpu", "RING", tmp, a.save_dir, overrides)
        portable = None
        if a.cpu_spread:
            portable, _ = run(a.ringtrain, job, a.workers, "cpu", "RING", tmp, a.save_dir, overrides, tag="cpu-portable",
                              env={"RINGTRAIN_KERNELS": "portable"})
        gpu, gpu_model = run(a.ringtrain, job, a.workers, "gpu", a.implementation, tmp, a.save_dir, overrides)
        deterministic = None
        if a.gpu_twice:
            again, again_model = run(a.ringtrain, job, a.workers, "gpu", a.implementation, tmp, a.save_dir, overrides,
                                     tag="gpu-again")
            with open(gpu_model, "rb") as f1, open(again_model, "rb") as f2:
                curve = lambda h: [(r["epoch"], r["loss"], r.get("accuracy")) for r in h]
                deterministic = curve(again) == curve(gpu) and f1.read() == f2.read()
    print(f"{os.path.basename(job)}, {a.workers} worker(s), GPU over {a.implementation}:")
    rel = lambda x, ref: abs(x["loss"] - ref["loss"]) / max(abs(ref["loss"]), 1e-12)
    spread = "" if portable is None else " CPU portable loss | CPU spread |"
    print(f"| epoch | CPU loss | GPU loss | rel. diff | CPU acc | GPU acc |{spread}")
    print("|---|---|---|---|---|---|" + ("---|---|" if spread else ""))
    worst = worst_spread = 0.0
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        worst = max(worst, rel(g, c))
        row = (f"| {c['epoch']} | {c['loss']:.6f} | {g['loss']:.6f} | {rel(g, c):.2e} | "
               f"{c.get('accuracy', float('nan')):.4f} | {g.get('accuracy', float('nan')):.4f} |")
        if portable is not None and i < len(portable):
            worst_spread = max(worst_spread, rel(portable[i], c))
            row += f" {portable[i]['loss']:.6f} | {rel(portable[i], c):.2e} |"
        print(row)
    tolerance = max(a.tolerance, 4 * worst_spread)
    same = len(cpu) == len(gpu) and len(cpu) > 0 and worst <= tolerance
    twice = "" if deterministic is None else f" gpu_twice_same_bytes={'yes' if deterministic else 'no'}"
    print(f"RESULT job={os.path.basename(job)} same_curve={'yes' if same else 'no'} epochs={len(cpu)} max_rel_loss_diff={worst:.3e} "
          f"tolerance={tolerance:.3g}{'' if portable is None else f' cpu_spread={worst_spread:.3e}'}{twice}")
    sys.exit(0 if same and deterministic is not False else 1)


if __name__ == "__main__":
    main()
