#!/bin/bash
# gzip-sync (bench/local_fleet_panel.py): where the plain version's write-IOPS dependence comes from. Each stage of
# its command, in a blkio group limited to 200 write IOPS on the root disk (the storage knob's level), against the same
# unlimited, with the disk writes each stage completed (/proc/diskstats) and what the group was charged. Root, cgroup v1;
# DEV (major:minor, default 254:0) and DISK (its name in /proc/diskstats, default vda) name the disk.  Usage: bash bench/gzip_sync_stages.sh
set -u
G=/sys/fs/cgroup/blkio/q85inv
DEV=${DEV:-254:0}; DISK=${DISK:-vda}
mkdir -p $G; echo "$DEV 200" > $G/blkio.throttle.write_iops_device
trap 'cd /; rm -rf "$W"; rmdir $G 2>/dev/null' EXIT
W=/root/q85inv; rm -rf $W; mkdir -p $W; cd $W
stage() { # name, limited(0/1), command
  local t0 t1 w0 w1
  w0=$(awk -v d="$DISK" '$3==d{print $8}' /proc/diskstats)
  t0=$(date +%s.%N)
  if [ "$2" = 1 ]; then sh -c "echo \$\$ > $G/cgroup.procs; exec sh -c '$3'"; else sh -c "$3"; fi
  t1=$(date +%s.%N)
  w1=$(awk -v d="$DISK" '$3==d{print $8}' /proc/diskstats)
  printf "%-8s limited=%s %6.3f s  disk writes %d\n" "$1" "$2" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')" "$((w1 - w0))"
}
for rep in 1 2 3; do
 for lim in 0 1; do
  stage rm $lim "rm -rf d; mkdir d"
  stage split $lim "seq 1000000 | split -b 65536 - d/f"
  stage gzip $lim "gzip d/*"
 done
done
echo "what the limited group was charged:"; head -5 $G/blkio.throttle.io_serviced
