#!/bin/sh
# Emulated host for the local fleet (cgroup v1): CPU quota, a co-runner pinned to CPU 1 and the
# transparent-huge-page policy (TLB reach: a memory-subsystem property that leaves compute alone).
#   quiho-emulate.sh start CGDIR QUOTA_PCT CORUNNER SECONDS [THP [PERIOD_US]]   THP = keep | always | never
#   quiho-emulate.sh stop  CGDIR
# THP is machine-wide: the policy found before the first change is saved in $THP_SAVE and put back by
# stop (and by quiho's controller-side cleanup), so a killed run cannot leave it changed for good.
# CGDIR is the measurement cgroup (under /sys/fs/cgroup/cpu); the co-runner lives in CGDIR-co so that
# stop can find and kill every process it started, whatever happened in between. Arguments are checked
# here again (the controller validated them already); nothing is evaluated as shell code.
set -eu
THP=/sys/kernel/mm/transparent_hugepage/enabled
THP_SAVE=/run/quiho-thp.orig
cmd=$1
cg=$2
case $cg in /sys/fs/cgroup/cpu/*) ;; *) echo "quiho-emulate: refusing cgroup path $cg" >&2; exit 2 ;; esac
case $cmd in
start)
  pct=$3; co=$4; secs=$5; thp=${6:-keep}; period=${7:-20000}
  case $pct in ''|*[!0-9]*) echo "quiho-emulate: bad quota '$pct'" >&2; exit 2 ;; esac
  case $period in ''|*[!0-9]*) echo "quiho-emulate: bad CFS period '$period'" >&2; exit 2 ;; esac
  if [ "$period" -lt 1000 ] || [ "$period" -gt 1000000 ]; then
    echo "quiho-emulate: CFS period $period us outside 1000..1000000" >&2; exit 2
  fi
  case $secs in ''|*[!0-9]*) echo "quiho-emulate: bad seconds '$secs'" >&2; exit 2 ;; esac
  case $thp in
    keep) ;;
    always|never)
      [ -w "$THP" ] || { echo "quiho-emulate: $THP is not writable (needs root and THP support)" >&2; exit 1; }
      # the current policy is the bracketed word; keep the first saved one (a crashed run's is the original)
      [ -e "$THP_SAVE" ] || sed -n 's/.*\[\([a-z]*\)\].*/\1/p' "$THP" > "$THP_SAVE"
      echo "$thp" > "$THP" ;;
    *) echo "quiho-emulate: unknown THP policy '$thp'" >&2; exit 2 ;;
  esac
  mkdir -p "$cg" "$cg-co"
  # CFS period: 20 ms unless the host says otherwise (quiho_cfs_period_us). Short periods make a 0.3 s run
  # span many periods (on the Xeon the levels were tuned on: nadds1 at 70 %, CoV 1 % with 20 ms vs 5 % with
  # 100 ms), but on some CPUs throttling at 20 ms is far from proportional (issue 15: a 6 % quota step cost
  # 35 %); quiho fleet calibrate measures both and writes the period it chose into the generated inventory.
  echo "$period" > "$cg/cpu.cfs_period_us"
  if [ "$pct" -lt 100 ]; then echo $((pct * period / 100)) > "$cg/cpu.cfs_quota_us"; fi
  case $co in
    none) exit 0 ;;
    stream) set -- --stream 1 --stream-l3-size 64M ;;
    vm) set -- --vm 1 --vm-bytes 1G ;;
    *) echo "quiho-emulate: unknown co-runner '$co'" >&2; exit 2 ;;
  esac
  # -t bounds the co-runner's life even if stop never runs.
  setsid sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec taskset -c 1 stress-ng "$@"' sh "$cg-co" "$@" -t "$secs" \
    </dev/null >/dev/null 2>&1 &
  sleep 1  # let the co-runner reach its steady state before anything is measured
  # (cgroup files always report size 0, so test the content, not -s)
  [ -n "$(cat "$cg-co/cgroup.procs")" ] || { echo "quiho-emulate: co-runner $co did not start" >&2; exit 1; }
  ;;
stop)
  if [ -s "$THP_SAVE" ]; then cat "$THP_SAVE" > "$THP" && rm -f "$THP_SAVE"; fi
  for d in "$cg" "$cg-co"; do
    [ -d "$d" ] || continue
    i=0
    while [ -n "$(cat "$d/cgroup.procs")" ] && [ $i -lt 100 ]; do
      kill -9 $(cat "$d/cgroup.procs") 2>/dev/null || true
      sleep 0.1
      i=$((i + 1))
    done
    rmdir "$d"
  done
  ;;
*) echo "quiho-emulate: unknown command '$cmd'" >&2; exit 2 ;;
esac
