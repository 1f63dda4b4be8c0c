#!/usr/bin/env python3
"""Sums up a kernel profile that Nsight Compute wrote (`ncu --csv --page raw --metrics gpu__time_duration.sum
--log-file F ...`, as tests/gpu/on_device.sh profile runs it): each kernel's launches and GPU time, largest first.

Usage: tests/gpu/kernel_profile.py PROFILE.csv [--steps N] [--top K]
  --steps N  also give each kernel's time per training step (the profile covered N steps)
  --top K    print the K largest (default 30)
"""
import argparse
import collections
import csv
import io
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    with open(a.csv, errors="replace") as f:
        lines = [l for l in f.read().splitlines() if l.startswith('"')]  # ncu's own notes start with ==
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows or "Kernel Name" not in rows[0]:
        sys.exit(f"kernel_profile: {a.csv} holds no ncu CSV header (\"ID\",...,\"Kernel Name\",...)")
    name, dur = rows[0].index("Kernel Name"), rows[0].index("gpu__time_duration.sum")
    unit = rows[1][dur]
    scale = {"ns": 1e-6, "us": 1e-3, "usecond": 1e-3, "nsecond": 1e-6, "ms": 1.0, "msecond": 1.0}.get(unit, 1e-6)
    per = collections.defaultdict(lambda: [0, 0.0])
    for r in rows[2:]:
        try:
            t = float(r[dur].replace(",", "")) * scale
        except (ValueError, IndexError):
            continue
        per[r[name]][0] += 1
        per[r[name]][1] += t
    total = sum(t for _, t in per.values())
    print(f"{sum(n for n, _ in per.values())} launches, {total:.3f} ms of GPU time" +
          (f", {total / a.steps:.3f} ms per step over {a.steps} steps" if a.steps else ""))
    print("| launches | ms | share | " + ("ms per step | " if a.steps else "") + "kernel |")
    print("|---|---|---|" + ("---|" if a.steps else "") + "---|")
    for k, (n, t) in sorted(per.items(), key=lambda kv: -kv[1][1])[:a.top]:
        step = f" {t / a.steps:.3f} |" if a.steps else ""
        print(f"| {n} | {t:.3f} | {100 * t / total:.1f}% |{step} {k[:110]} |")


if __name__ == "__main__":
    main()
