#!/bin/sh
# Emulated host for the local fleet (cgroup v1): CPU quota + a co-runner pinned to CPU 1.
#   quiho-emulate.sh start CGDIR QUOTA_PCT CORUNNER SECONDS
#   quiho-emulate.sh stop  CGDIR
# CGDIR is the measurement cgroup (under /sys/fs/cgroup/cpu); the co-runner lives in CGDIR-co so that
# stop can find and kill every process it started, whatever happened in between. Arguments are checked
# here again (the controller validated them already); nothing is evaluated as shell code.
set -eu
cmd=$1
cg=$2
case $cg in /sys/fs/cgroup/cpu/*) ;; *) echo "quiho-emulate: refusing cgroup path $cg" >&2; exit 2 ;; esac
case $cmd in
start)
  pct=$3; co=$4; secs=$5
  case $pct in ''|*[!0-9]*) echo "quiho-emulate: bad quota '$pct'" >&2; exit 2 ;; esac
  case $secs in ''|*[!0-9]*) echo "quiho-emulate: bad seconds '$secs'" >&2; exit 2 ;; esac
  mkdir -p "$cg" "$cg-co"
  echo 100000 > "$cg/cpu.cfs_period_us"
  if [ "$pct" -lt 100 ]; then echo $((pct * 1000)) > "$cg/cpu.cfs_quota_us"; fi
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
