#!/bin/sh
# Emulated host for the local fleet (cgroup v1): CPU quota, a co-runner pinned to CPU 1, the
# transparent-huge-page policy (TLB reach: a memory-subsystem property that leaves compute alone), and the knobs
# of quiho.fleet.local.knobs: a write-IOPS limit on the disk the application writes to (storage), a memory
# limit (memory capacity) and a network namespace whose loopback is shaped (network). The kernel-entry knob is
# a seccomp filter (quiho-seccomp.py), installed by the wrapper, not here.
#   quiho-emulate.sh start CGDIR QUOTA_PCT CORUNNER SECONDS [THP [PERIOD_US [IOPS [MEM_MIB [NET [SETTLE]]]]]]
#     THP = keep | always | never; IOPS = 0 | MAJ:MIN:N (write IOPS of that disk); MEM_MIB = 0 | N (page
#     cache allowed beyond the application's own memory);
#     NET = 0 | rate:MBIT | delay:US (tbf rate or netem delay on the namespace's loopback);
#     SETTLE = 1 | 0: wait a second for the co-runner's steady state here, or leave it to the caller
#   quiho-emulate.sh stop  CGDIR
# The blkio and memory groups mirror CGDIR's name under /sys/fs/cgroup/blkio and /sys/fs/cgroup/memory; the
# namespace is qh-<CGDIR's name>. qh_join (playbooks/vars/emulation.yml) joins whichever exist.
# THP is machine-wide: the policy found before the first change is saved in $THP_SAVE and put back by
# stop (and by quiho's controller-side cleanup), so a killed run cannot leave it changed for good.
# CGDIR is the measurement cgroup (under /sys/fs/cgroup/cpu); the co-runner lives in CGDIR-co so that
# stop can find and kill every process it started, whatever happened in between. Arguments are checked
# here again (the controller validated them already); nothing is evaluated as shell code.
set -eu
THP=/sys/kernel/mm/transparent_hugepage/enabled
# The memory-capacity knob's watcher (python3: it blocks between looks instead of forking a sleep 50 times a
# second, which on a VM whose two vCPUs share a core slowed compute on the other CPU by a third). cgroup v1 makes
# only a page fault wait at the limit: any other charge there (a read's page cache, a pipe buffer, a kernel-mode
# fault in copy_to_user) fails with ENOMEM or EFAULT once nothing is left to reclaim. So the limit stays HEADROOM
# above the group's unreclaimable memory (anonymous, shmem, kernel) plus the allowance, and the page cache is
# trimmed to the allowance instead. The watcher looks every 20 ms, for at most SECONDS, and at once when the usage
# crosses memory + allowance + OVERSHOOT (an eventfd on memory.usage_in_bytes: a 20 ms look let a 64 MiB file stay
# cached); a cache above the allowance (plus a 4 MiB slack) is reclaimed by lowering the limit to memory + allowance
# for a moment (the kernel evicts the oldest file pages; a lowering it refuses, EBUSY, is left for the next look),
# and the limit is set back to memory + allowance + max(HEADROOM, twice the memory's growth since the last look).
# While that memory grows, nothing is trimmed (the burst would meet the lowered limit) and the threshold is not
# moved (registering one waits for an RCU grace period, long enough for a burst to go unwatched). 256 MiB is twice what a fault-in burst reached
# in one look on the VMs this was built on (6.5 GiB/s with huge pages). A fault waiting at the limit (an eventfd on
# memory.oom_control) doubles it at once. Meetings with nothing left to reclaim are counted in EVENTS_FILE, so the
# runs around them are marked (another process's system call may have failed then): that waiting fault, or
# memory.failcnt risen outside the watcher's own trims while the group holds < 4 MiB of page cache (a writer that
# meets the limit with dirty pages waits for their writeback and fails nothing). The watcher must outlive the runs:
# without it a group with the OOM killer off stays frozen.
#   python3 -c "$MEM_WATCH" CO_CGDIR MEMCG ALLOWANCE_MIB SECONDS EVENTS_FILE
MEM_WATCH='
import errno, os, select, sys, time
co, m, allowance, secs, events = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20, int(sys.argv[4]), sys.argv[5]
HEADROOM, SLACK, OVERSHOOT = 256 << 20, 4 << 20, 16 << 20
def read(name):
    with open(os.path.join(m, name)) as fh:
        return fh.read()
def limit_to(n):
    try:
        with open(os.path.join(m, "memory.limit_in_bytes"), "w") as fh:
            fh.write(str(n))
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
with open(os.path.join(co, "cgroup.procs"), "w") as fh:
    fh.write(str(os.getpid()))
efd = os.eventfd(0)
oom = os.open(os.path.join(m, "memory.oom_control"), os.O_RDONLY)
with open(os.path.join(m, "cgroup.event_control"), "w") as fh:
    fh.write(f"{efd} {oom}")
def count():
    global met
    met += 1
    with open(events + ".tmp", "w") as fh:
        fh.write(f"{met}\n")
    os.replace(events + ".tmp", events)
usage = os.open(os.path.join(m, "memory.usage_in_bytes"), os.O_RDONLY)
over, over_at = None, 0
def arm(at):
    global over, over_at
    fd = os.eventfd(0)
    with open(os.path.join(m, "cgroup.event_control"), "w") as fh:
        fh.write(f"{fd} {usage} {at}")
    if over is not None:
        os.close(over)
    over, over_at = fd, at
end, last, met, seen = time.monotonic() + secs, 0, 0, int(read("memory.failcnt"))
arm(allowance + OVERSHOOT)
open(events + ".ready", "w").close()
while time.monotonic() < end:
    ready = select.select([efd] if over is None else [efd, over], [], [], 0.02)[0]
    try:
        if over in ready:
            os.read(over, 8)
        limit, failcnt = int(read("memory.limit_in_bytes")), int(read("memory.failcnt"))
        if efd in ready:
            os.read(efd, 8)
            limit_to(2 * limit)
            count()
            seen = int(read("memory.failcnt"))
            continue
        stat = dict(line.split() for line in read("memory.stat").splitlines())
        cache = int(stat["active_file"]) + int(stat["inactive_file"])
        if failcnt > seen and cache < SLACK:
            count()
        seen = failcnt
        try:
            kmem = int(read("memory.kmem.usage_in_bytes"))
        except OSError:
            kmem = 0
        rss = int(stat["rss"])
        own = rss + int(stat.get("shmem", 0)) + kmem
        growing = own - last > SLACK
        want = own + allowance + max(HEADROOM, 2 * max(0, own - last))
        last = own
        if cache > allowance + SLACK and not growing:
            limit_to(own + allowance)
            limit_to(want)
            seen = int(read("memory.failcnt"))  # charges that met the lowered limit of the trim itself
        elif want > limit or want < limit - SLACK:
            limit_to(want)
        if not growing and abs(own + allowance + OVERSHOOT - over_at) > SLACK:
            arm(own + allowance + OVERSHOOT)
    except OSError:
        break
'
THP_SAVE=/run/quiho-thp.orig
cmd=$1
cg=$2
case $cg in /sys/fs/cgroup/cpu/*) ;; *) echo "quiho-emulate: refusing cgroup path $cg" >&2; exit 2 ;; esac
name=${cg##*/}
events=/run/quiho-memcap-$name.events  # the memory watcher's count of limit meetings (library/quiho_runs.py)
case $cmd in
start)
  pct=$3; co=$4; secs=$5; thp=${6:-keep}; period=${7:-20000}; iops=${8:-0}; mem=${9:-0}; net=${10:-0}; settle=${11:-1}
  case $settle in 0|1) ;; *) echo "quiho-emulate: bad settle '$settle' (0 or 1)" >&2; exit 2 ;; esac
  case $iops in 0) ;; *[!0-9:]*|:*|*::*|*:|*:*:*:*) echo "quiho-emulate: bad IOPS limit '$iops'" >&2; exit 2 ;;
    *:*:*) ;; *) echo "quiho-emulate: bad IOPS limit '$iops'" >&2; exit 2 ;; esac
  case $mem in ''|*[!0-9]*) echo "quiho-emulate: bad memory limit '$mem'" >&2; exit 2 ;; esac
  case $net in 0|rate:[1-9]*|delay:[1-9]*) ;; *) echo "quiho-emulate: bad network shaping '$net'" >&2; exit 2 ;; esac
  case ${net#*:} in *[!0-9]*) echo "quiho-emulate: bad network shaping '$net'" >&2; exit 2 ;; esac
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
  if [ "$iops" != 0 ]; then
    mkdir -p "/sys/fs/cgroup/blkio/$name"
    echo "${iops%:*} ${iops##*:}" > "/sys/fs/cgroup/blkio/$name/blkio.throttle.write_iops_device"
  fi
  if [ "$mem" -gt 0 ]; then
    command -v python3 >/dev/null || { echo "quiho-emulate: the memory-capacity knob needs python3" >&2; exit 1; }
    # Memory capacity: the page cache may hold MEM_MIB beyond the group's own memory (anonymous, shmem, kernel),
    # which cannot be reclaimed without swap. A watcher on the last CPU trims the cache to that allowance and keeps
    # the limit well above the group's own memory as it grows and shrinks; with the OOM killer off for the group,
    # an application that still meets the limit is paused until the watcher raises it, never killed, and the
    # meeting is counted in /run/quiho-memcap-NAME.events (read around each run by library/quiho_runs.py).
    m="/sys/fs/cgroup/memory/$name"
    mkdir -p "$m"
    echo 1 > "$m/memory.oom_control"
    echo $(((mem + 256) * 1048576)) > "$m/memory.limit_in_bytes"
    echo 0 > "$events"
    setsid taskset -c $(($(nproc) - 1)) python3 -c "$MEM_WATCH" "$cg-co" "$m" "$mem" "$secs" "$events" \
      </dev/null >/dev/null 2>&1 &
    # the application must not start before the watcher watches: a short run would never meet its allowance
    i=0
    until [ -e "$events.ready" ] || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
    [ -e "$events.ready" ] || { echo "quiho-emulate: the memory-capacity watcher did not start" >&2; exit 1; }
    rm -f "$events.ready"
  fi
  if [ "$net" != 0 ]; then
    ip netns add "qh-$name"
    ip -n "qh-$name" link set lo up
    case $net in
      rate:*) tc -n "qh-$name" qdisc add dev lo root tbf rate "${net#rate:}mbit" burst 256kb latency 100ms ;;
      delay:*) tc -n "qh-$name" qdisc add dev lo root netem delay "${net#delay:}us" ;;
    esac
  fi
  case $co in
    none) exit 0 ;;
    stream) set -- --stream 1 --stream-l3-size 64M ;;
    vm) set -- --vm 1 --vm-bytes 1G ;;
    cpu) set -- --cpu 1 --cpu-method int64 ;;
    *) echo "quiho-emulate: unknown co-runner '$co'" >&2; exit 2 ;;
  esac
  # -t bounds the co-runner's life even if stop never runs.
  setsid sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec taskset -c 1 stress-ng "$@"' sh "$cg-co" "$@" -t "$secs" \
    </dev/null >/dev/null 2>&1 &
  # let the co-runner reach its steady state before anything is measured; SETTLE 0 where the caller waits for it
  # instead, over runs it does not measure (library/quiho_runs.py's settle_s)
  if [ "$settle" = 1 ]; then sleep 1; fi
  # (cgroup files always report size 0, so test the content, not -s); without the settle, wait for it to join
  i=0
  until [ -n "$(cat "$cg-co/cgroup.procs")" ] || [ $i -ge 100 ]; do sleep 0.02; i=$((i + 1)); done
  [ -n "$(cat "$cg-co/cgroup.procs")" ] || { echo "quiho-emulate: co-runner $co did not start" >&2; exit 1; }
  ;;
stop)
  if [ -s "$THP_SAVE" ]; then cat "$THP_SAVE" > "$THP" && rm -f "$THP_SAVE"; fi
  [ -e "/run/netns/qh-$name" ] && { ip netns pids "qh-$name" | xargs -r kill -9; ip netns del "qh-$name"; }
  for d in "$cg" "$cg-co" "/sys/fs/cgroup/blkio/$name" "/sys/fs/cgroup/memory/$name"; do
    [ -d "$d" ] || continue
    i=0
    while [ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] && [ $i -lt 100 ]; do
      kill -9 $(cat "$d/cgroup.procs") 2>/dev/null || true
      sleep 0.1
      i=$((i + 1))
    done
    # a killed task still exiting keeps a v1 cgroup busy after cgroup.procs reads empty: retry the removal for a
    # second, and only while the group is there (a cleanup beside this one may remove it, and a resumed run
    # recreate it under the same name)
    i=0
    until rmdir "$d" 2>/dev/null || [ ! -d "$d" ] || [ $i -ge 20 ]; do sleep 0.05; i=$((i + 1)); done
    [ ! -d "$d" ] || rmdir "$d"
  done
  rm -f "$events" "$events.tmp" "$events.ready"
  ;;
*) echo "quiho-emulate: unknown command '$cmd'" >&2; exit 2 ;;
esac
