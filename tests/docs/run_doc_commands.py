#!/usr/bin/env python3
"""Runs the shell blocks of README.md and docs/guide/*.md marked `<!-- doc-test -->` in a
clean copy of the tree, as a newcomer would type them at the repository root.

A marked block is a ```sh fence directly after a line `<!-- doc-test -->`. Each runs with
`bash -euo pipefail` in a fresh copy of the tracked (and untracked, not ignored) files,
where build/bin is the build under test, with a deadline of --timeout seconds. The test
fails when any block fails or times out, and when no block is marked at all.

usage: run_doc_commands.py --source ROOT --bin BUILD/bin [--timeout 120] [--list]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = "<!-- doc-test -->"


def marked_blocks(path):
    """(line number, text) of every marked ```sh block of a Markdown file."""
    blocks = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == MARK:
            j = i + 1
            if j >= len(lines) or not re.match(r"^```(sh|bash|shell)\s*$", lines[j].strip()):
                raise SystemExit("%s:%d: %s must be followed by a ```sh fence" % (path, i + 1, MARK))
            k = j + 1
            while k < len(lines) and lines[k].strip() != "```":
                k += 1
            if k == len(lines):
                raise SystemExit("%s:%d: the marked block never ends" % (path, j + 1))
            blocks.append((j + 1, "\n".join(lines[j + 1:k])))
            i = k
        i += 1
    return blocks


def tree_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True).stdout
        return [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(("build", ".git", "node_modules"))]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
        return files


def clean_copy(root, bin_dir, dest):
    for rel in tree_files(root):
        src = os.path.join(root, rel)
        if not os.path.isfile(src) or rel.startswith("build"):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel))
    os.makedirs(os.path.join(dest, "build"), exist_ok=True)
    os.symlink(os.path.abspath(bin_dir), os.path.join(dest, "build", "bin"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--bin", required=True, help="the build's bin folder (holds ringtrain)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--list", action="store_true", help="only list the marked blocks")
    args = ap.parse_args()
    root = os.path.abspath(args.source)
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "guide", "*.md")))
    blocks = [(os.path.relpath(d, root), line, text) for d in docs for line, text in marked_blocks(d)]
    if args.list:
        for rel, line, text in blocks:
            print("%s:%d\n%s\n" % (rel, line, text))
        return 0
    if not blocks:
        print("no block of README.md or docs/guide/ is marked %s" % MARK)
        return 1
    if not os.path.exists(os.path.join(args.bin, "ringtrain")):
        print("%s has no ringtrain: build it first" % args.bin)
        return 1
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RINGTRAIN_", "TF_CONFIG", "SLURM_"))}
    failed = 0
    for rel, line, text in blocks:
        with tempfile.TemporaryDirectory(prefix="ringtrain-doc-") as copy:
            clean_copy(root, args.bin, copy)
            try:
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=copy, env=env, timeout=args.timeout,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                ok, why = r.returncode == 0, "exit %d" % r.returncode
                output = r.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                ok, why = False, "still running after %g s" % args.timeout
                output = (e.stdout or b"").decode(errors="replace")
        print("%s %s:%d (%s)" % ("ok  " if ok else "FAIL", rel, line, why))
        if not ok:
            failed += 1
            print("  the block:\n" + "\n".join("    " + l for l in text.split("\n")))
            print("  its output (last 30 lines):\n" + "\n".join("    " + l for l in output.split("\n")[-30:]))
    print("%d passed, %d failed" % (len(blocks) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
