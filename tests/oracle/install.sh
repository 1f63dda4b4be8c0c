#!/usr/bin/env bash
# Installs the TensorFlow.js oracle (tests/oracle/package-lock.json: @tensorflow/tfjs
# 4.22.0, pure JavaScript, nothing native) into tests/oracle/node_modules.
#   tests/oracle/install.sh          installs unless the locked versions are already there
#   tests/oracle/install.sh --force  reinstalls
# Exits 0 when installed; otherwise 1 with one line on stderr saying why (no node, no npm,
# the registry unreachable). Tests that need the oracle then skip with that reason
# (tests/testing/tfjs_oracle.h). Idempotent; a no-op (well under a second) when current.
set -uo pipefail
cd "$(dirname "$0")"

fail() { echo "tests/oracle/install.sh: $*" >&2; exit 1; }

command -v node >/dev/null 2>&1 || fail "node (Node.js >= 18) not found on PATH; the tfjs fidelity tests will skip"
command -v npm >/dev/null 2>&1 || fail "npm not found on PATH; the tfjs fidelity tests will skip"

# npm ci leaves node_modules/.package-lock.json as a copy of what it installed: when it
# matches the lock file and tfjs loads, there is nothing to do.
if [ "${1:-}" != --force ] && [ -f node_modules/.package-lock.json ] &&
   node -e '
     const want = require("./package-lock.json").packages, have = require("./node_modules/.package-lock.json").packages;
     for (const [k, v] of Object.entries(want)) { if (k && (!have[k] || have[k].version !== v.version)) process.exit(1); }
     require("@tensorflow/tfjs");' >/dev/null 2>&1; then
  exit 0
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --ignore-scripts: nothing here needs an install script (core-js' only prints a banner),
# and none may fetch native code.
if ! timeout 600 npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >"$log" 2>&1; then
  # npm's most telling line: the failed fetch ("request to URL failed, reason: ..."), else its first error.
  reason=$(grep -m1 -E "npm (error|ERR!) (FetchError|network|.*reason:)" "$log" || grep -m1 -E "npm (error|ERR!)" "$log" ||
           tail -n 1 "$log")
  reason=${reason#npm error }; reason=${reason#npm ERR! }
  fail "npm ci failed (is the npm registry reachable?): ${reason:-no output}"
fi
node -e 'require("@tensorflow/tfjs")' >/dev/null 2>&1 || fail "npm ci ran but @tensorflow/tfjs does not load"
echo "tests/oracle: @tensorflow/tfjs $(node -p 'require("@tensorflow/tfjs/package.json").version') installed"
