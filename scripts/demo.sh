#!/usr/bin/env bash
# One command from a fresh clone: install, then run quiho's main job on the embedded default.
# Main job: `quiho profile stream@nadds1 stream@nadds30` on the local fleet calibrated to this machine (no -i:
# on first use quiho probes how the CPU quota, the transparent-huge-page policy, a co-runner and the knobs for
# core sharing, storage, kernel entry, the network and memory capacity act here, ~1-2 min, and writes the fleet to
# .quiho/local-fleet-<key>.yml: a two-level screening design of the kept factors, 8 hosts for up to 4, 16 (a
# fold-over) for 5-7; `quiho fleet show` prints the levels, measured effects and the design), i.e. fingerprint
# the fleet (the resources battery: a stressor for each class the knobs vary), run both versions of the
# STREAM-like example interleaved on every host in two blocked rounds, and print the verdict
# (regression/improvement/no-change/inconclusive) with its size, CI and p-value, the designed fleet's answer (each
# factor's effect per version: memory-bound -> CPU-bound), both IRUPs and the hints. Default mode (fingerprint
# 8 stressors x 1 s, one repetition, on round 1's 8 hosts; then 2 rounds x 3 runs per version per host): 5.0-5.7 min
# from a fresh clone, set-up and calibration (0.9-1.2 min) included, on a 2-vCPU AMD EPYC microVM with seven factors
# kept (16 hosts; docs/design.md, "The main job's time"); up to 3 min more when the calibration waits out noise,
# about 2-3 min more when the first pass is inconclusive and every host is visited again
# (--stages 2, the default: docs/design.md, "A second pass when the first is inconclusive"); QUIHO_DEMO_MODE=default uses the 43-stressor battery (much longer).
# Needs root (cgroups); the report lands in .quiho/profile-report/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh run
export QUIHO_STORE=${QUIHO_STORE:-.quiho/quiho.db}
if [ "$(id -u)" != 0 ]; then
  echo "demo: the local fleet emulates hosts with cgroups and needs root; rerun as root" >&2
  exit 1
fi
BATTERY=resources
[ "${QUIHO_DEMO_MODE:-quick}" = default ] && BATTERY=default
# Default mode: the resources battery (8 stressors x 1 s, one repetition); --repetitions 5 over 2 rounds is
# ceil(5/2) = 3 runs per version a visit, and each host of the 16-host fold-over is visited in one round.
REPS=(--repetitions 5)
# ... and only the first round's 8 hosts are fingerprinted: the designed fleet's answer reads no fingerprint, and
# the fold-over's 8 fingerprints cost 100-130 s of the demo; the IRUPs rest on 8 hosts (`quiho profile` alone fingerprints all 16).
HOSTS=(--fingerprint-hosts first-round)
[ "$BATTERY" = default ] && REPS=() && HOSTS=()
.venv/bin/quiho profile stream@nadds1 stream@nadds30 --battery "$BATTERY" --max-age 6h "${REPS[@]}" "${HOSTS[@]}" \
  --report .quiho/profile-report
