#!/bin/bash
# Runs `ringtrain bench allreduce` and its peers on this machine, on loopback, with the same
# size schedule and iteration counts, and prints their rows and then a side-by-side table:
# 4-byte latency (median time_us) and busbw (GB/s) at 1 MiB, 16 MiB and 64 MiB.
#   tests/peers/build_peers.sh && tests/peers/run_peers.sh
# Environment: RINGTRAIN (default build/bin/ringtrain), PEERS (default build/peers),
# PYTHON (default /usr/bin/python3, with Debian's python3-torch), ITERS (20), WARMUP (5),
# MAX_BYTES (67108864). Run it on a quiet machine: the figures are wall times.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
ringtrain=${RINGTRAIN:-$root/build/bin/ringtrain}
peers=${PEERS:-$root/build/peers}
python=${PYTHON:-/usr/bin/python3}
iters=${ITERS:-20}
warmup=${WARMUP:-5}
max_bytes=${MAX_BYTES:-67108864}
out=$(mktemp -d /tmp/run_peers.XXXXXX)
trap 'rm -rf "$out"' EXIT
# Open MPI: loopback only, for both its control and its data traffic.
mpi="mpirun --allow-run-as-root -np 2 --mca oob_tcp_if_include lo"

names=()
run() {  # run NAME COMMAND...
  local name=$1
  shift
  names+=("$name")
  echo "== $name: $*"
  if timeout 900 "$@" > "$out/${#names[@]}" 2> "$out/${#names[@]}.err"; then
    cat "$out/${#names[@]}"
  else
    echo "   FAILED (exit $?):"
    tail -5 "$out/${#names[@]}.err"
    : > "$out/${#names[@]}"
  fi
}

run "torch-gloo 2 procs" "$python" "$root/tests/peers/torch_gloo_allreduce.py" --procs 2 --max_bytes "$max_bytes" \
  --iters "$iters" --warmup "$warmup"
run "torch-gloo 4 procs" "$python" "$root/tests/peers/torch_gloo_allreduce.py" --procs 4 --max_bytes "$max_bytes" \
  --iters "$iters" --warmup "$warmup"
run "Gloo ring_chunked 2" "$peers/gloo_allreduce" 2 4 "$max_bytes" "$iters" "$warmup"
run "MPI TCP 2" $mpi --mca btl tcp,self --mca btl_tcp_if_include lo "$peers/mpi_allreduce" 4 "$max_bytes" "$iters" \
  "$warmup"
run "MPI shared memory 2" $mpi --mca btl vader,self "$peers/mpi_allreduce" 4 "$max_bytes" "$iters" "$warmup"
bench=(bench allreduce --max_bytes "$max_bytes" --iters "$iters" --warmup "$warmup")
run "ringtrain 2" "$ringtrain" "${bench[@]}" --workers 2
run "ringtrain 2 tcp" "$ringtrain" "${bench[@]}" --workers 2 --backend tcp
run "ringtrain 4" "$ringtrain" "${bench[@]}" --workers 4
run "ringtrain 4 tcp" "$ringtrain" "${bench[@]}" --workers 4 --backend tcp

# The column of a row whose bytes are $2 in file $1, or "-".
cell() { awk -v b="$2" -v c="$3" '$1 == b { v = $c } END { print (v == "" ? "-" : v) }' "$1"; }
echo
echo "== side by side ($(uptime | sed 's/.*load/load/'))"
printf '%-22s %12s %14s %14s %14s\n' "" "4 B time_us" "1 MiB busbw" "16 MiB busbw" "64 MiB busbw"
for i in "${!names[@]}"; do
  f="$out/$((i + 1))"
  printf '%-22s %12s %14s %14s %14s\n' "${names[$i]}" "$(cell "$f" 4 2)" "$(cell "$f" 1048576 4)" \
    "$(cell "$f" 16777216 4)" "$(cell "$f" 67108864 4)"
done
