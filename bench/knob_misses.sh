#!/bin/bash
# What two panel registrations missed about the knobs (docs/design.md, "Six pairs more, and what the footprint did
# not see"). 1: the storage knob's write-IOPS limit (cgroup v1 blk-throttle, 200 a second) lets a group's first
# 100 ms slice through: seconds for N 8 KiB O_DIRECT writes in a group so limited. 2: rereading a 128 MB file from
# the disk against the page cache, for a fast reader (cat) and two hashes (readahead overlaps the disk with the
# hash): seconds warm and with the page cache dropped before the run. Pinned to CPU 0 as the local fleet runs an
# application. Root, cgroup v1; DEV (major:minor, default 254:0) names the root disk; drops the machine's page
# cache (echo 1 > /proc/sys/vm/drop_caches). Usage: bash bench/knob_misses.sh
set -u
G=/sys/fs/cgroup/blkio/qknobmiss
DEV=${DEV:-254:0}
W=$(mktemp -d /root/qknobmiss.XXXX)
trap 'cd /; rm -rf "$W"; rmdir $G 2>/dev/null' EXIT
mkdir -p $G; echo "$DEV 200" > $G/blkio.throttle.write_iops_device
cd "$W"
secs() { local t0 t1; t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN{printf " %.3f", b - a}'; }
echo "| 8 KiB O_DIRECT writes at 200 write IOPS | seconds (3 runs) |"
echo "|---|---|"
for n in 5 10 20 30 40 80; do
  printf "| %d |" "$n"
  for _ in 1 2 3; do
    rm -f out.bin; sync; sleep 0.3
    secs sh -c "echo \$\$ > $G/cgroup.procs; exec taskset -c 0 dd if=/dev/zero of=out.bin bs=8k count=$n oflag=direct status=none"
  done
  echo " |"
done
head -c 128000000 /dev/zero > f; sync
echo
echo "| a 128 MB file read twice | warm (4 runs) | page cache dropped first (4 runs) |"
echo "|---|---|---|"
for prog in cat md5sum sha1sum; do
  warm=""; cold=""
  for _ in 1 2 3 4; do
    $prog f f > /dev/null
    warm="$warm$(secs taskset -c 0 sh -c "$prog f f > /dev/null")"
    echo 1 > /proc/sys/vm/drop_caches
    cold="$cold$(secs taskset -c 0 sh -c "$prog f f > /dev/null")"
  done
  echo "| $prog |$warm |$cold |"
done
