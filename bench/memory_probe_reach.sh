#!/bin/bash
# Which memory workloads a stream co-runner on CPU 1 slows on this machine (issue 47: the co-runner is dropped when
# the calibration's memory probe does not feel it). Each stress-ng workload pinned to CPU 0, its worker's real time
# (stress-ng's metrics) alone and with `stress-ng --stream 1 --stream-l3-size 64M` (the fleet's co-runner) on CPU 1,
# four runs each after one dropped, THP policy as the machine has it. The first row is the calibration's memory
# probe (quiho/fleet/local/probes.py); the others stream larger arrays or chase pointers (randlist). Root not needed.
# Usage: bash bench/memory_probe_reach.sh
set -u
lscpu | grep -E 'Model name|L3'
run() { # stress-ng args...: worker real time of one run
  taskset -c 0 stress-ng "$@" -q --metrics-brief 2>&1 | awk '$2 == "metrc:" && $6 ~ /^[0-9.]+$/ {print $6}' | tail -1
}
four() { run "$@" > /dev/null; for _ in 1 2 3 4; do printf " %s" "$(run "$@")"; done; }
probes=(
  "--stream 1 --stream-ops 12 --stream-l3-size 8M"
  "--stream 1 --stream-ops 3 --stream-l3-size 32M"
  "--randlist 1 --randlist-items 200000 --randlist-size 64 --randlist-ops 20"
  "--randlist 1 --randlist-items 1000000 --randlist-size 64 --randlist-ops 4"
)
echo "| workload (stress-ng) | alone, s | with the stream co-runner, s |"
echo "|---|---|---|"
for p in "${probes[@]}"; do
  # shellcheck disable=SC2086
  alone=$(four $p)
  taskset -c 1 stress-ng --stream 1 --stream-l3-size 64M -t 300 > /dev/null 2>&1 & co=$!
  sleep 3
  # shellcheck disable=SC2086
  with=$(four $p)
  kill $co; wait $co 2>/dev/null
  echo "| $p |$alone |$with |"
done
