#!/bin/bash
# Which memory workloads a stream co-runner on CPU 1 slows on this machine (issue 47: the co-runner is dropped when
# the calibration's memory probe does not feel it). Each stress-ng workload pinned to CPU 0, its worker's real time
# (stress-ng's metrics) alone and with the fleet's stream co-runner on CPU 1, four runs each after one dropped, THP
# policy as the machine has it. The first row is the calibration's memory probe and the co-runner the fleet's,
# both read from the tree (quiho/fleet/local/probes.py's PROBES["memory"], playbooks/files/quiho-emulate.sh's
# stream co-runner); the others stream larger arrays or chase pointers (randlist). Root not needed; needs the
# repository's .venv. Usage: bash bench/memory_probe_reach.sh
set -eu
cd "$(dirname "$0")/.."
# the calibration's memory probe without stress-ng itself and its output flags (run() adds them)
probe=$(.venv/bin/python -c 'from quiho.fleet.local.probes import PROBES
print(" ".join(a for a in PROBES["memory"][1:] if a not in ("-q", "--metrics-brief")))')
co=$(sed -n 's/^ *stream) set -- \(.*\) ;;$/\1/p' playbooks/files/quiho-emulate.sh)
[ -n "$co" ] || { echo "memory_probe_reach: no stream co-runner in playbooks/files/quiho-emulate.sh" >&2; exit 1; }
set +e
lscpu | grep -E 'Model name|L3'
run() { # stress-ng args...: worker real time of one run
  taskset -c 0 stress-ng "$@" -q --metrics-brief 2>&1 | awk '$2 == "metrc:" && $6 ~ /^[0-9.]+$/ {print $6}' | tail -1
}
four() { run "$@" > /dev/null; for _ in 1 2 3 4; do printf " %s" "$(run "$@")"; done; }
probes=(
  "$probe"
  "--stream 1 --stream-ops 3 --stream-l3-size 32M"
  "--randlist 1 --randlist-items 200000 --randlist-size 64 --randlist-ops 20"
  "--randlist 1 --randlist-items 1000000 --randlist-size 64 --randlist-ops 4"
)
echo "| workload (stress-ng) | alone, s | with the stream co-runner, s |"
echo "|---|---|---|"
for p in "${probes[@]}"; do
  # shellcheck disable=SC2086
  alone=$(four $p)
  # shellcheck disable=SC2086
  taskset -c 1 stress-ng $co -t 300 > /dev/null 2>&1 & cop=$!
  sleep 3
  # shellcheck disable=SC2086
  with=$(four $p)
  kill $cop; wait $cop 2>/dev/null
  echo "| $p |$alone |$with |"
done
