"""A panel of real programs from Debian's packages on a local fleet designed over the knobs (issue 47).

Usage (root; one profile per pair, ~5-12 min each on 2 vCPUs):
    python bench/local_fleet_panel.py --out /tmp/panel [--pairs sqlite-commit,dd-blocks] [--runs 1] [--first 2]
    python bench/local_fleet_panel.py --table /tmp/panel       # the table of earlier runs, nothing run
    python bench/local_fleet_panel.py --reanalyse /tmp/panel --into /tmp/panel-now   # their runs, today's analysis

Every pair's *expected* class story is written below, in PAIRS, before anything runs: the class each version
must be given at class level (``storage``, ``kernel-entry``, ``network``, ``memory-capacity``, ``CPU``,
``memory``; ``None`` for "not moved by the knobs' resources", i.e. neither storage, kernel entry, network nor
memory capacity). A pair is right when both
versions' classes contain the expected class (or, for ``None``, none of the three). Nothing is tuned on the
result: the programs, sizes and expectations are fixed here.

The fleet: the default local fleet, calibrated to this machine in each run's own store (``quiho fleet calibrate``):
the axes and knobs its probes keep, laid out as a screening design of at most seven two-level factors
(:func:`quiho.fleet.local.calibrate.design_factors`; 8 hosts, or 16 when round 2 is the fold-over), fingerprinted
with the resources battery (named on the command line: a project file where the bench runs does not change it).
Each run gets its own store. The table gives per pair and run: the metric change, each version's class, right or
wrong, and each factor's effect on each version (± 95 % CI) as ``quiho profile`` printed them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUIHO = str(REPO / ".venv" / "bin" / "quiho")
#: The pairs run with quiho's venv first on PATH, as every panel run before 51e1a7b did (a pair's bare ``python3``
#: was then the venv's on the local fleet; since, the caller's): the registered runs stay comparable.
RUN_ENV = {**os.environ, "PATH": str(REPO / ".venv" / "bin") + os.pathsep + os.environ.get("PATH", os.defpath)}

_STOPPED: list[int] = []


def _quiho(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a quiho command; a SIGTERM to the bench is passed on to it, so it undoes its knobs as it stops.

    After such a command the caller writes what it got and stops (:func:`_stop_if_asked`).
    """
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as p:
        def forward(signum: int, _frame: object) -> None:
            _STOPPED.append(signum)
            p.send_signal(signum)

        old = signal.signal(signal.SIGTERM, forward)
        try:
            out, err = p.communicate()
        finally:
            signal.signal(signal.SIGTERM, old)
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _stop_if_asked(where: Path) -> None:
    if _STOPPED:
        sys.exit(f"panel: stopped by SIGTERM; what finished is kept in {where}")


#: mawk-buffer's program, the same in both versions: 30 sines a line, then the line printed.
_SIN30 = "{s = 0; for (i = 1; i <= 30; i++) s += sin($1 * i); print s}"


def _fetch(nbytes: int, client: str, then: str = "", sparse: bool = False, python: str = "python3") -> str:
    """A file of ``nbytes`` served by Python's http.server on the loopback (HTTP/1.0: a connection a request),
    fetched once by ``client URL`` as soon as it answers, then the shell text ``then``. ``sparse``: the file has
    no blocks (``truncate``), so making it writes nothing to the disk and replacing it discards nothing.
    ``python``: the server's interpreter (``/usr/bin/python3``: Debian's, not whatever shim ``PATH`` finds)."""
    make = f"rm -f f; truncate -s {nbytes} f" if sparse else f"head -c {nbytes} /dev/zero > f"
    return (f"{make}; {python} -m http.server -b 127.0.0.1 18765 >/dev/null 2>&1 & "
            f"s=$!; for i in 1 2 3 4 5 6 7 8 9 10; do {client} http://127.0.0.1:18765/f && break; "
            f"sleep 0.1; done; {then}kill $s")


def _requests(n: int) -> str:
    """curl asking http.server ``n`` times more for a 10 kB file, after the fetch that found it up."""
    return _fetch(10000, "curl -s -o /dev/null", f'for i in $(seq {n}); do echo "url = http://127.0.0.1:18765/f"; '
                                                 'echo "output = /dev/null"; done | curl -s -K -; ')


#: sqlite-wal's and git-fsync's shared parts: 150 rows, one commit each; 200 one-line files added and committed.
_ROWS150 = 'seq 1 150 | sed "s/.*/INSERT INTO t VALUES(&, randomblob(200));/"'
_GIT200 = "rm -rf r; git init -q r; cd r; seq 1 200 | split -l 1 - f; git add .; git -c user.name=q -c user.email=q@q"


#: name -> (versions {label: shell command}, expected class of each version, what the pair is). Written before
#: any run. Commands are fixed text run by ``sh -c`` in the host's run directory (no user data in them).
PAIRS: dict[str, tuple[dict[str, str], tuple[str | None, str | None], str]] = {
    "sqlite-commit": ({
        "batch": 'rm -f t.db t.db-journal; (echo "CREATE TABLE t(x, y); BEGIN;"; seq 1 150 | '
                 'sed "s/.*/INSERT INTO t VALUES(&, randomblob(200));/"; echo "COMMIT;") | sqlite3 t.db',
        "autocommit": 'rm -f t.db t.db-journal; (echo "CREATE TABLE t(x, y);"; seq 1 150 | '
                      'sed "s/.*/INSERT INTO t VALUES(&, randomblob(200));/") | sqlite3 t.db',
    }, (None, "storage"), "sqlite3 loads 150 rows in one transaction vs one fsync'd commit per row"),
    "dd-blocks": ({
        "1m": "dd if=/dev/zero of=/dev/null bs=1M count=2000 status=none",
        "512": "dd if=/dev/zero of=/dev/null bs=512 count=400000 status=none",
    }, (None, "kernel-entry"), "dd copies 2 GB in 1 MiB blocks vs 200 MB in 512-byte blocks (a system call each)"),
    "dd-sync": ({
        "buffered": "dd if=/dev/zero of=out.bin bs=4k count=200 status=none",
        "dsync": "dd if=/dev/zero of=out.bin bs=4k count=200 oflag=dsync status=none",
    }, (None, "storage"), "dd writes 800 KB buffered vs each 4 KiB block synchronously (O_DSYNC)"),
    "curl-size": ({
        "small": _fetch(1000000, "curl -s -o /dev/null"),
        "large": _fetch(200000000, "curl -s -o /dev/null"),
    }, (None, "network"), "curl fetches 1 MB vs 200 MB from Python's http.server over the loopback"),
    "xz-level": ({
        "0": "cat /usr/bin/* 2>/dev/null | head -c 4000000 | xz -0 -T1 > /dev/null",
        "9": "cat /usr/bin/* 2>/dev/null | head -c 4000000 | xz -9 -T1 > /dev/null",
    }, ("CPU", "CPU"), "xz compresses 4 MB of binaries at -0 vs -9 (single thread)"),
    # Registered 2026-11-29 before any run, with the memory-capacity knob (page cache 32 MiB beyond the
    # application's own memory). sqlite-commit's batch version fsyncs its CREATE TABLE and COMMIT (8 fdatasync
    # calls by strace -c), so at 200 IOPS it is storage-bound too: that pair stays as registered; this one's batch
    # version syncs nothing.
    "sqlite-sync": ({
        "nosync": 'rm -f t.db t.db-journal; (echo "PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY; '
                  'CREATE TABLE t(x, y); BEGIN;"; seq 1 150 | '
                  'sed "s/.*/INSERT INTO t VALUES(&, randomblob(200));/"; echo "COMMIT;") | sqlite3 t.db',
        "autocommit": 'rm -f t.db t.db-journal; (echo "CREATE TABLE t(x, y);"; seq 1 150 | '
                      'sed "s/.*/INSERT INTO t VALUES(&, randomblob(200));/") | sqlite3 t.db',
    }, (None, "storage"), "sqlite3 loads 150 rows with synchronous=OFF in one transaction vs a commit per row"),
    "sort-buffer": ({
        "large": "cat /usr/bin/* 2>/dev/null | head -c 60000000 | sort -S 500M -T . > /dev/null",
        "small": "cat /usr/bin/* 2>/dev/null | head -c 60000000 | sort -S 2M -T . > /dev/null",
    }, (None, "memory-capacity"), "sort 60 MB of binaries' lines in a 500 MB buffer vs a 2 MB one (temporary "
       "files merged back: file data read again)"),
    "gzip-self": ({
        "a": "cat /usr/bin/* 2>/dev/null | head -c 30000000 | gzip -6 > /dev/null",
        "b": "cat /usr/bin/* 2>/dev/null | head -c 30000000 | gzip -6 > /dev/null",
    }, ("CPU", "CPU"), "gzip -6 on 30 MB of binaries, the same version twice (no class shift may be claimed)"),
    # Registered 2026-12-04 before any run, for the two classes no pair above was right on: memory capacity
    # (sort-buffer's large version reads 60 MB of /usr/bin through `cat`, so the page-cache allowance and the
    # seccomp rules touch it too) and memory (no pair had it). Both versions make their own input, so every byte
    # they read was written inside the host's group (a file written outside it is charged elsewhere). Sizes fixed
    # by footprint alone, on a busy machine, nothing timed under a knob: md5-reread's versions 0.6 / 0.8 s and
    # 2 MB resident; awk-table's 0.5 / 2.8 s, 2 / 164 MB resident.
    "md5-reread": ({
        "fits": "rm -f f; head -c 16000000 /dev/zero > f; md5sum f f f f f f f f f f f f f f f f > /dev/null",
        "exceeds": "rm -f f; head -c 128000000 /dev/zero > f; md5sum f f > /dev/null",
    }, (None, "memory-capacity"), "md5sum hashes 256 MB: a 16 MB file 16 times (stays in the page cache) vs a "
       "128 MB file twice (more than the page-cache allowance: read again from disk)"),
    "awk-table": ({
        "sum": "seq 2000000 | awk '{s += $1} END {print s}' > /dev/null",
        "table": "seq 2000000 | awk '{a[$1] = $1} END {print length(a)}' > /dev/null",
    }, ("CPU", "memory"), "awk (mawk) sums 2 million numbers vs keeps them in a 2-million-entry array (164 MB, "
       "touched at random)"),
    # Registered 2026-12-05 before any run: xz-level, CPU / CPU by registration, read memory-bound through the
    # stream co-runner in the last three runs (+25 to +62 %; its -9 dictionary is 64 MiB and -0's match finder
    # spills the 1 MiB L2, so the co-runner's thrashing of the shared L3 reaches both), so the panel's CPU class
    # had no pair whose working set stays in a core's own cache. gzip's window is 32 KiB and its hash chains
    # 64 KiB at every level.
    "gzip-level": ({
        "1": "cat /usr/bin/* 2>/dev/null | head -c 30000000 | gzip -1 > /dev/null",
        "9": "cat /usr/bin/* 2>/dev/null | head -c 30000000 | gzip -9 > /dev/null",
    }, ("CPU", "CPU"), "gzip compresses 30 MB of binaries at -1 vs -9 (a 32 KiB window at both)"),
    # Registered 2026-12-05 09:36 UTC before any run, for kernel entry (dd-blocks right in 1 of 5: its 1 MiB version
    # runs 25 ms after the prefault and makes ~4,200 system calls, 160,000 a second, so 4,000 seccomp rules at
    # 0.67 us a call move it by ~10 %; its registration "-" was wrong, the knob was right). Here both versions do
    # the same arithmetic; by strace -c -f and `time` outside the fleet: block-buffered 1,900 system calls in
    # 0.58 s (3,300 a second: 4,000 rules add 0.2 %), -W interactive (a write per line) 601,000 in 0.7 s (+60 %).
    "mawk-buffer": ({
        "block": f"seq 300000 | awk '{_SIN30}' > /dev/null",
        "interactive": f"seq 300000 | awk -W interactive '{_SIN30}' > /dev/null",
    }, (None, "kernel-entry"), "mawk prints 300,000 computed lines block-buffered vs with -W interactive "
       "(unbuffered: a write(2) per line)"),
    # Registered 2026-12-05 18:06 UTC before any run of them, four pairs more, so that the share of pairs right
    # is measured on more than one pair per class (stop 85). Each expectation rests on what the program does,
    # measured outside the fleet with no knob set (strace -c -f, /usr/bin/time; 2 vCPUs, quiet); a version is
    # "not kernel entry" only below ~30,000 system calls a second (4,000 seccomp rules at 0.67 us a call: 2 %).
    # sed-unbuffered: the same substitution with a backreference; plain 2,400 calls in 0.59 s (4,000 a second),
    # -u 2,590,000 (a read(2) per input byte, a write(2) per line) in 1.56 s. gzip-sync: 106 files of 64 KiB of
    # seq's text; plain 6,500 calls in ~0.25 s (~26,000 a second) and no sync, --synchronous 106 fsync and 106
    # fdatasync (the file and its directory), ~0.28 s on the unthrottled disk. factor-digits: 40,000 15-digit
    # numbers (0.32-0.37 s, 7,000 calls: ~20,000 a second) vs 30,000 18-digit ones (0.62 s, 6,200 calls); both
    # under 2 MB resident, the numbers in registers. wget-size: curl-size's test with another Debian client
    # (200 MB in 0.15 s unshaped). The four are in classes whose knobs act strongly; memory and memory capacity,
    # the classes whose effects are small, get no second pair here.
    "sed-unbuffered": ({
        "buffered": "seq 300000 | sed -E 's/([0-9])([0-9])/\\2\\1/g' | wc -l > /dev/null",
        "unbuffered": "seq 300000 | sed -u -E 's/([0-9])([0-9])/\\2\\1/g' | wc -l > /dev/null",
    }, (None, "kernel-entry"), "GNU sed swaps digit pairs in 300,000 lines buffered vs with -u (a read(2) per "
       "input byte and a write(2) per line)"),
    "gzip-sync": ({
        "plain": "rm -rf d; mkdir d; seq 1000000 | split -b 65536 - d/f; gzip d/*",
        "synchronous": "rm -rf d; mkdir d; seq 1000000 | split -b 65536 - d/f; gzip --synchronous d/*",
    }, (None, "storage"), "gzip compresses 106 files of 64 KiB vs the same with --synchronous (each output file "
       "and its directory synced)"),
    "factor-digits": ({
        "15": "seq 100000000000000 100000000040000 | factor | wc -l > /dev/null",
        "18": "seq 100000000000000000 100000000000030000 | factor | wc -l > /dev/null",
    }, ("CPU", "CPU"), "coreutils factor on 40,000 15-digit numbers vs 30,000 18-digit ones (arithmetic in "
       "registers, no memory to speak of)"),
    "wget-size": ({
        "small": _fetch(1000000, "wget -q -O /dev/null"),
        "large": _fetch(200000000, "wget -q -O /dev/null"),
    }, (None, "network"), "wget fetches 1 MB vs 200 MB from Python's http.server over the loopback"),
    # Registered 2026-12-05 21:30 UTC before any run of them (stop 86, an Intel Xeon 2-vCPU Firecracker microVM,
    # cgroup v1), six pairs more, each expectation read off `python bench/pair_footprint.py` (no knob set, quiet):
    # a version's system calls a second and the block requests its blkio group is charged (writes and discards, what
    # the storage knob meters), with the rules written down after stop 85's misses: "not kernel entry" only below
    # ~30,000 calls a second, "not storage" only when its requests at 200 a second cost under ~3 % of its time, and
    # no "-" where the evidence is between. grep-linebuf: 0.47-0.58 s both; plain 1,380 calls (2,900 a second),
    # --line-buffered 232,000 (398,000 a second). bc-scale: 0.35 / 0.72 s, 160 calls, no block request, numbers of
    # a few kB. sha-digest: 0.42 / 0.57 s, 7,400 calls (17,600 / 12,900 a second), 1 request (+1 %), an 8 MB file
    # (a quarter of the page-cache allowance). sqlite-wal: WAL with synchronous=NORMAL 0.009 s and 30 requests
    # (+1,760 % at 200 IOPS: the WAL's checkpoint on close), rollback journal with FULL 0.079 s and 1,955 (+12,400 %):
    # both storage. git-fsync: plain 0.087 s and 787 requests (removing the last run's repository discards its
    # files; +4,500 %), the commit with core.fsync=all 0.103 s and 810: both storage. curl-requests: 100 requests
    # 0.32 s (73,000 calls a second), 200 requests 0.35 s (96,000): kernel entry possible in both, so both are
    # registered only as network: each request is a connection (SYN, request, response, FIN), at least two round
    # trips of 1 ms under the knob's 500 us a packet, +0.2 s and +0.4 s at least. Chosen where the footprint
    # predicts a strong effect or none, so the share on these six says how the fleet reads strong effects; no
    # memory or memory-capacity pair among them.
    "grep-linebuf": ({
        "plain": "seq 300000 | grep -E '([0-9])\\1' | wc -l > /dev/null",
        "line-buffered": "seq 300000 | grep --line-buffered -E '([0-9])\\1' | wc -l > /dev/null",
    }, (None, "kernel-entry"), "GNU grep finds lines with a repeated digit (a backreference) in 300,000 lines, "
       "block-buffered vs --line-buffered (a write(2) per matching line)"),
    "bc-scale": ({
        "900": "echo 'scale=900; 4*a(1)' | bc -l > /dev/null",
        "1300": "echo 'scale=1300; 4*a(1)' | bc -l > /dev/null",
    }, ("CPU", "CPU"), "bc computes pi to 900 vs 1,300 digits (arbitrary precision in a few kB)"),
    "sha-digest": ({
        "sha1": "rm -f f; head -c 8000000 /dev/zero > f; sha1sum f f f f f f f f f f f f f f f f > /dev/null",
        "sha512": "rm -f f; head -c 8000000 /dev/zero > f; sha512sum f f f f f f f f f f f f f f f f > /dev/null",
    }, ("CPU", "CPU"), "coreutils hashes an 8 MB file 16 times with SHA-1 vs SHA-512"),
    "sqlite-wal": ({
        "wal": 'rm -f t.db t.db-wal t.db-shm t.db-journal; (echo "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; '
               f'CREATE TABLE t(x, y);"; {_ROWS150}) | sqlite3 t.db > /dev/null',
        "rollback": 'rm -f t.db t.db-wal t.db-shm t.db-journal; (echo "PRAGMA journal_mode=DELETE; PRAGMA '
                    f'synchronous=FULL; CREATE TABLE t(x, y);"; {_ROWS150}) | sqlite3 t.db > /dev/null',
    }, ("storage", "storage"), "sqlite3 commits 150 rows one by one in WAL mode with synchronous=NORMAL vs a "
       "rollback journal with synchronous=FULL"),
    "git-fsync": ({
        "plain": f"{_GIT200} commit -qm m",
        "fsync": f"{_GIT200} -c core.fsync=all commit -qm m",
    }, ("storage", "storage"), "git adds 200 new one-line files to a fresh repository and commits them, "
       "the commit plain vs with core.fsync=all"),
    "curl-requests": ({
        "100": _requests(100),
        "200": _requests(200),
    }, ("network", "network"), "curl asks Python's http.server for a 10 kB file 100 vs 200 times (a connection a "
       "request)"),
    # Registered 2026-12-06 01:00 UTC before any run of them (stop 87, the Intel Xeon 2-vCPU Firecracker microVM of
    # stop 86, kernel without netem: the network knob is a 1 Gbit/s tbf rate), six pairs more, each expectation read
    # off `python bench/pair_footprint.py PAIR` (pinned to CPU 0, no knob, quiet) by stop 86's rules. perl-autoflush:
    # 0.11 s and 10,000 calls a second plain, 0.29 s and 3,400,000 with $| = 1. dd-direct: 5 requests at 1 MiB
    # (+460 % at 200 a second), 258 at 8 KiB (+9,500 %). lz4-level: 0.30 / 0.49 s, 11,000 / 7,000 calls a second,
    # no request; LZ4 HC's tables are 256 KiB. sha1-reread: the 16 MB file 13,000 calls a second and 1 request;
    # the 128 MB one 80,000 (kernel entry possible, not registered). curl-twice: a sparse 100 MB file (no block
    # written, none discarded), 0.18 / 0.25 s, 156,000 / 189,000 calls a second (kernel entry possible in both):
    # network both, each transfer 0.8 s at 1 Gbit/s. sort-numeric: 0.08 / 0.19 s, 26,000 / 11,000 calls a
    # second. Chosen, as stop 86's six, where the footprint predicts a strong effect or none. No memory pair: on
    # this machine kind the calibration dropped the stream co-runner in 6 of 6 runs (memory probe +2 to +4 %), and
    # perl keeping a million keys in a hash, +30 % under that co-runner outside the fleet and not faster with huge
    # pages, would be read as CPU by a fleet without it: a known gap, not a test.
    "perl-autoflush": ({
        "buffered": "perl -e 'for (1..1000000) { print \"$_\\n\" }' > /dev/null",
        "autoflush": "perl -e '$| = 1; for (1..1000000) { print \"$_\\n\" }' > /dev/null",
    }, (None, "kernel-entry"), "perl prints a million lines block-buffered vs with $| = 1 (a write(2) per line)"),
    "dd-direct": ({
        "1m": "rm -f out.bin; dd if=/dev/zero of=out.bin bs=1M count=2 oflag=direct status=none",
        "8k": "rm -f out.bin; dd if=/dev/zero of=out.bin bs=8k count=256 oflag=direct status=none",
    }, ("storage", "storage"), "dd writes 2 MB past the page cache (O_DIRECT) in 1 MiB vs 8 KiB blocks"),
    "lz4-level": ({
        "6": "seq 1000000 | lz4 -6 > /dev/null",
        "9": "seq 1000000 | lz4 -9 > /dev/null",
    }, ("CPU", "CPU"), "lz4 compresses a million numbers' text at HC level 6 vs 9"),
    "sha1-reread": ({
        "fits": "rm -f f; head -c 16000000 /dev/zero > f; sha1sum f f f f f f f f f f f f f f f f > /dev/null",
        "exceeds": "rm -f f; head -c 128000000 /dev/zero > f; sha1sum f f > /dev/null",
    }, (None, "memory-capacity"), "sha1sum hashes 256 MB: a 16 MB file 16 times vs a 128 MB file twice (more than "
       "the page-cache allowance: read again from disk)"),
    "curl-twice": ({
        "once": _fetch(100000000, "curl -s -o /dev/null", sparse=True),
        "twice": _fetch(100000000, "curl -s -o /dev/null", "curl -s -o /dev/null http://127.0.0.1:18765/f; ",
                        sparse=True),
    }, ("network", "network"), "curl fetches a 100 MB file from Python's http.server once vs twice over the "
       "loopback"),
    "sort-numeric": ({
        "n": "shuf -i 1-200000 --random-source=/dev/zero | sort -n --parallel=1 > /dev/null",
        "g": "shuf -i 1-200000 --random-source=/dev/zero | sort -g --parallel=1 > /dev/null",
    }, ("CPU", "CPU"), "GNU sort orders 200,000 shuffled integers with -n vs -g (parsed as floating point)"),
    # Registered 2026-12-06 04:03 UTC before any run of them (stop 88, the Intel Xeon 2-vCPU Firecracker microVM of
    # stops 86-87, tbf network knob), six pairs more, each expectation read off `python bench/pair_footprint.py --cmd
    # ...` (CPU 0, no knob, quiet) by the rules above (with the burst). bzip2-level: 0.38 / 0.42 s, 10,100 / 9,400 calls
    # a second, no request; its blocks are 100 / 900 kB. jq-filter: 0.23-0.29 / 1.34 s, 4,300-5,300 / 800 calls a second
    # (measured without -c, which prints a number the same). jq-unbuffered: 4,300 calls a second plain, 459,000 with
    # --unbuffered (a write(2) per value). wget-spider: a HEAD request 0.14 s, 18,800 calls a second (Debian's
    # /usr/bin/python3 as the server: this machine's PATH finds a pyenv shim first, a shell script of ~40 processes);
    # the whole sparse 100 MB 0.22 s and 257,000 (kernel entry possible, registered only as network: 0.8 s more at 1
    # Gbit/s). dd-reread: dd reads at memory speed, faster than this disk (sha1-reread's lesson: a reader slower than
    # the disk does not wait on it); 16 MB 32 times 0.17 s, 27,700 calls a second (its 32 dd processes), 1 request; 128
    # MB 4 times 0.17 s, 7,900, 2 requests. shred-remove: 20 MB of /dev/urandom written and removed 0.08 s, 4,300 calls
    # a second, no request (removed before writeback: no block to discard); shred -u 0.23 s, 1,006 requests (+2,094 %
    # even spread). Rejected on the footprint before registering: python3 -u (this shell's PYTHONUNBUFFERED made the
    # buffered version unbuffered too: 609,000 calls both ways), curl file:// (272,000 calls a second), cut with stdbuf
    # -oL (its plain version 96,000 in 17 ms of start-up), git in a fresh directory (plain 206 requests), sqlite3
    # synchronous=OFF (241,000 calls a second), sqlite3 :memory: (54,000). No memory pair, for stop 87's reason.
    "bzip2-level": ({
        "1": "seq 1000000 | bzip2 -1 > /dev/null",
        "9": "seq 1000000 | bzip2 -9 > /dev/null",
    }, ("CPU", "CPU"), "bzip2 compresses a million numbers' text in 100 kB vs 900 kB blocks"),
    "jq-filter": ({
        "double": "seq 200000 | jq -c '. * 2' > /dev/null",
        "explode": "seq 200000 | jq -c 'tostring | explode | add' > /dev/null",
    }, ("CPU", "CPU"), "jq doubles 200,000 numbers vs sums each one's character codes"),
    "jq-unbuffered": ({
        "plain": "seq 200000 | jq -c '. * 2' > /dev/null",
        "unbuffered": "seq 200000 | jq -c --unbuffered '. * 2' > /dev/null",
    }, (None, "kernel-entry"), "jq doubles 200,000 numbers, output buffered vs --unbuffered (a write(2) per value)"),
    "wget-spider": ({
        "head": _fetch(100000000, "wget -q --spider", sparse=True, python="/usr/bin/python3"),
        "get": _fetch(100000000, "wget -q -O /dev/null", sparse=True, python="/usr/bin/python3"),
    }, (None, "network"), "wget asks Python's http.server for a sparse 100 MB file's headers only (--spider: HEAD) "
       "vs the whole file over the loopback"),
    "dd-reread": ({
        "fits": "rm -f f; dd if=/dev/zero of=f bs=1M count=16 status=none; "
                "for i in $(seq 32); do dd if=f of=/dev/null bs=4M status=none; done",
        "exceeds": "rm -f f; dd if=/dev/zero of=f bs=1M count=128 status=none; "
                   "for i in 1 2 3 4; do dd if=f of=/dev/null bs=4M status=none; done",
    }, (None, "memory-capacity"), "dd reads 512 MB in 4 MiB blocks: a 16 MB file 32 times (stays in the page cache) "
       "vs a 128 MB file 4 times (more than the page-cache allowance: read again from disk)"),
    "shred-remove": ({
        "rm": "dd if=/dev/urandom of=s.bin bs=1M count=20 status=none; rm s.bin",
        "shred": "dd if=/dev/urandom of=s.bin bs=1M count=20 status=none; shred -u s.bin",
    }, (None, "storage"), "20 MB of random bytes written, then removed vs shredded (shred -u: three passes over "
       "the file, each synced, then renamed and removed)"),
    # Registered 2026-12-06 06:48 UTC before any run of them (stop 89, the Intel Xeon 2-vCPU Firecracker microVM of
    # stops 86-88, tbf network knob), six pairs more, each expectation read off `python bench/pair_footprint.py --cmd
    # ...` (CPU 0, no knob, quiet) by the rules above. perl-getppid: 5 million additions 0.21 s, 1,500 calls a second;
    # with getppid(2) in each 0.89 s, 5,600,000 (its first text, `$s += $_ for ...`, failed on every host of the first
    # run: the fleet's runs module expands environment variables in the argv as Ansible's command module does, and the
    # controller's `_` turned `$_` into a path; re-registered at 07:11 with a named loop variable, its expectation
    # unchanged, the panel restarted; see _unexpanded). split-sync: split writes 346 files of 4 KiB into a fresh
    # directory and rm -rf removes it, 631 block requests charged (+6,000 % even spread: the directory's blocks and the
    # files' metadata), with sync(1) on the files first 1,014 (+7,800 %): both storage (58,000 / 74,000 calls a second:
    # kernel entry possible, not registered). numfmt-format: 0.70 / 0.76 s, 7,000 / 8,400 calls a second, no request.
    # od-type: 0.55 / 0.93 s, 8,200 / 4,900. curl-head: curl -I 0.15 s, 21,000 calls a second (Debian's python3 as the
    # server); the whole sparse 100 MB 0.21 s, 93,000 (kernel entry possible, registered only as network: 0.8 s more at
    # 1 Gbit/s). numfmt-linebuf: plain as numfmt-format's si; under stdbuf -oL a write(2) per line, 1,004,000 calls in
    # 0.58 s (1,730,000 a second). Rejected on the footprint before registering: the fast readers for a second
    # memory-capacity pair (cat, cksum, wc -l: 106,000-405,000 calls a second on a file in the page cache, kernel entry
    # possible; dd-reread's dd with 4 MiB blocks is the one reader here both fast and sparing with calls), one file
    # synced with sync(1) (8 MB in 6 requests, under the free 20), xxd (58,000 calls a second), openssl enc and dgst
    # (35,000-170,000: they run faster than seq feeds them), zstd -3 (41,000). No memory pair, for stop 87's reason.
    "perl-getppid": ({
        "sum": "perl -e 'my $s = 0; for my $i (1 .. 5000000) { $s += $i }'",
        "getppid": "perl -e 'my $s = 0; for my $i (1 .. 5000000) { $s += getppid() }'",
    }, (None, "kernel-entry"), "perl adds 5 million numbers vs 5 million getppid(2) results (a system call each)"),
    "split-sync": ({
        "plain": "rm -rf d; mkdir d; seq 200000 | split -b 4096 - d/f; rm -rf d",
        "synced": "rm -rf d; mkdir d; seq 200000 | split -b 4096 - d/f; sync d/*; rm -rf d",
    }, ("storage", "storage"), "split writes 346 files of 4 KiB into a fresh directory, then removes them, plain vs "
       "each file synced with sync(1) first"),
    "numfmt-format": ({
        "si": "seq 1000000 | numfmt --to=si > /dev/null",
        "iec": "seq 1000000 | numfmt --to=iec-i --format=%.4f > /dev/null",
    }, ("CPU", "CPU"), "coreutils numfmt writes a million numbers in SI units vs IEC units with four decimals"),
    "od-type": ({
        "x1": "seq 500000 | od -v -An -tx1 > /dev/null",
        "f8": "seq 500000 | od -v -An -tf8 > /dev/null",
    }, ("CPU", "CPU"), "coreutils od dumps 3.4 MB of text as hexadecimal bytes vs as 8-byte floating point"),
    "curl-head": ({
        "head": _fetch(100000000, "curl -s -I -o /dev/null", sparse=True, python="/usr/bin/python3"),
        "get": _fetch(100000000, "curl -s -o /dev/null", sparse=True, python="/usr/bin/python3"),
    }, (None, "network"), "curl asks Python's http.server for a sparse 100 MB file's headers only (-I: HEAD) vs the "
       "whole file over the loopback"),
    "numfmt-linebuf": ({
        "plain": "seq 1000000 | numfmt --to=si > /dev/null",
        "line-buffered": "seq 1000000 | stdbuf -oL numfmt --to=si > /dev/null",
    }, (None, "kernel-entry"), "coreutils numfmt writes a million numbers in SI units, block-buffered vs line-buffered "
       "by stdbuf -oL (a write(2) per line)"),
}

#: Ten self-pairs (registered 2026-11-29 before any run): one version of a pair above against itself. Right: both
#: runs get the same class (the issue's bar: no class shift in >= 9 of 10).
SELF_PAIRS: dict[str, tuple[dict[str, str], tuple[str | None, str | None], str]] = {
    f"self-{pair}-{v}": ({"a": PAIRS[pair][0][v], "b": PAIRS[pair][0][v]}, ("same", "same"),
                         f"{PAIRS[pair][2]}: the {v} version against itself")
    for pair, v in (("sqlite-sync", "autocommit"), ("sqlite-sync", "nosync"), ("dd-blocks", "1m"),
                    ("dd-blocks", "512"), ("dd-sync", "dsync"), ("curl-size", "large"), ("xz-level", "9"),
                    ("gzip-self", "a"), ("sort-buffer", "small"), ("sort-buffer", "large"))
}
ALL_PAIRS = {**PAIRS, **SELF_PAIRS}


def _unexpanded(cmd: str) -> bool:
    """Whether ``cmd`` ran as written before 25b987c, when the runs module expanded ``$NAME`` from the controller's
    environment (bash exports ``$_``): a text rewritten then is refused, so new runs are not counted with runs of
    other text."""
    return os.path.expandvars(cmd) == cmd


def _spec(name: str, versions: dict[str, str]) -> str:
    lines = ["schema_version: 1", f"name: {name}", "versions:"]
    lines += [f"  {v}: {{command: [sh, -c, {json.dumps(cmd)}]}}" for v, cmd in versions.items()]
    lines += ["metric: {kind: runtime, unit: s, higher_is_better: false}", "repetitions: 4", "timeout: 300"]
    return "\n".join(lines) + "\n"


def _calibration(store: Path) -> dict:
    r = _quiho([QUIHO, "fleet", "calibrate", "--store", str(store), "--json"])
    _stop_if_asked(store.parent)
    if r.returncode != 0:
        sys.exit(f"panel: calibration failed: {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout)


def _classes(report: dict) -> tuple[str, str, dict]:
    design = report.get("design") or {}
    stories = design.get("stories") or design.get("classes") or {}
    vals = list(stories.values()) if isinstance(stories, dict) else list(stories)
    cls = [str((v or {}).get("label", v)) if isinstance(v, dict) else str(v) for v in vals[:2]]
    while len(cls) < 2:
        cls.append("?")
    return cls[0], cls[1], design


def _named(got: str) -> set[str]:
    """The classes a version's class ``got`` ("memory/storage-bound", "CPU-time-bound", ...) names, whole.

    Whole classes only: "memory" is not "memory-capacity".
    """
    return {c.removesuffix("-time") for c in got.removesuffix("-bound").split("/")}


def _right(expected: str | None, got: str) -> bool:
    named = _named(got)
    if expected is None:
        return not named & {"storage", "kernel-entry", "network", "memory-capacity"}
    return expected in named


#: the IRUP's (paper view's) primary classes in the design's words, to say where the two views agree
_IRUP_CLASS = {"cpu": "CPU", "cpu-cache": "memory", "memory": "memory", "vm": "memory", "os": "kernel-entry",
               "storage": "storage", "network": "network", "memory-capacity": "memory-capacity"}


def _irup_top(report: Path) -> tuple[str, str, str]:
    """(comparison verdict, largest class of A, of B) from ``quiho profile``'s ``report.json``, or ``?``.

    A version whose IRUP is not meaningful has no class: ``n/m``.
    """
    irup = (json.loads(report.read_text()).get("irup") or {}) if report.exists() else {}
    comp = irup.get("comparison") or {}
    shares = comp.get("class_shares") or {}
    if not shares:
        return "?", "?", "?"
    tops = []
    for side in ("a", "b"):
        meaningful = ((irup.get(side) or {}).get("validity") or {}).get("verdict") == "meaningful"
        top = max(shares[side], key=shares[side].get)
        tops.append(_IRUP_CLASS.get(top, top) if meaningful else "n/m")
    return str(comp.get("verdict", "?")), tops[0], tops[1]


def run(out: Path, pairs: list[str], runs: int, first: int = 1) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for r in range(first, first + runs):
        rd = out / f"run-{r}"
        store = rd / "quiho.db"
        if store.exists():
            done = sorted(pd.name for pd in rd.iterdir() if (pd / "meta.json").exists())
            sys.exit(f"panel: {rd} has a store already; a fresh run needs its own (--first {r + 1})"
                     + (f"; it finished {', '.join(done)}" if done else
                        f"; no pair of it finished (a stopped run?): move it aside to run {r} afresh"))
        rd.mkdir(exist_ok=True)
        cal = _calibration(store)
        (rd / "calibration.json").write_text(json.dumps(cal, indent=1))
        factors = (cal.get("design") or {}).get("factors") or cal.get("kept") or []
        for name in pairs:
            versions, _expected, _what = ALL_PAIRS[name]
            pd = rd / name
            pd.mkdir(exist_ok=True)
            (pd / "spec.yml").write_text(_spec(name, versions))
            a, b = list(versions)
            t0 = time.monotonic()
            p = _quiho([QUIHO, "profile", f"{name}@{a}", f"{name}@{b}", "--spec", str(pd / "spec.yml"),
                        "--battery", "resources", "--store", str(store), "--report", str(pd)], env=RUN_ENV)
            (pd / "stdout.txt").write_text(p.stdout)
            (pd / "stderr.txt").write_text(p.stderr)
            (pd / "meta.json").write_text(json.dumps({"rc": p.returncode, "wall_s": time.monotonic() - t0,
                                                      "factors": factors}))
            print(f"panel: run {r} {name}: rc {p.returncode}, {time.monotonic() - t0:.0f} s", file=sys.stderr)
            _stop_if_asked(rd)
    table(out)


def table(out: Path) -> None:
    print("| run | pair | expected | class A | class B | right | IRUP (paper view): verdict, largest class A → B "
          "| views agree | wall s | resource profile line |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    right: dict[str, list[bool]] = {}
    for rd in sorted(out.glob("run-*")):
        for pd in sorted(p for p in rd.iterdir() if p.is_dir()):
            if pd.name not in ALL_PAIRS or not (pd / "meta.json").exists():  # not a pair, or not finished
                continue
            meta = json.loads((pd / "meta.json").read_text())
            text = (pd / "stdout.txt").read_text() if (pd / "stdout.txt").exists() else ""
            lines = text.splitlines()
            prof = next((ln for ln in lines if ln.startswith("resource profile:")), "")
            vers = list(ALL_PAIRS[pd.name][0])
            cls = [next((ln.split(":", 1)[1].strip().split(" (")[0] for ln in lines
                         if ln.strip().startswith(f"{v}:")), "?") for v in vers]
            exp = ALL_PAIRS[pd.name][1]
            ok = (cls[0] == cls[1] != "?" if exp == ("same", "same") else
                  all(_right(e, c) for e, c in zip(exp, cls, strict=True)))
            right.setdefault(pd.name, []).append(ok)
            story = prof.removeprefix("resource profile:").strip()[:90]
            verdict, top_a, top_b = _irup_top(pd / "report.json")
            # the views agree when each version's largest IRUP class is the class its design story names; a
            # version whose IRUP is not meaningful (n/m) says nothing either way
            said = [(t, c) for t, c in zip((top_a, top_b), cls, strict=True) if t != "n/m"]
            agree = "?" if "?" in (top_a, top_b) or not said else (
                "yes" if all(t in _named(c) for t, c in said) else "no")
            print(f"| {rd.name} | {pd.name} | {exp[0] or '-'} / {exp[1] or '-'} | {cls[0]} | {cls[1]} | "
                  f"{'yes' if ok else 'NO'} | {verdict}, {top_a} → {top_b} | {agree} | {meta.get('wall_s', 0):.0f} "
                  f"| {story} |")
    print()
    for name, oks in right.items():
        print(f"{name}: right in {sum(oks)} of {len(oks)} runs")
    print("\nEach version's lines with every factor's effect ± 95 % CI are in <out>/run-N/<pair>/stdout.txt.")


def reanalyse(out: Path, into: Path) -> None:
    """Every finished pair of ``out`` analysed again by this quiho (``quiho profile --batch``), into ``into``.

    The same stored runs, nothing measured: each run's store is copied (the analysis saves its profile there) and
    each pair's output goes where :func:`table` reads it, so the table compares a rule change on earlier runs.
    """
    for rd in sorted(out.glob("run-*")):
        if not (rd / "quiho.db").exists():
            continue
        nd = into / rd.name
        nd.mkdir(parents=True, exist_ok=True)
        store = nd / "quiho.db"
        if not store.exists():
            with sqlite3.connect(rd / "quiho.db") as src, sqlite3.connect(store) as dst:
                src.backup(dst)
        with sqlite3.connect(store) as con:
            batches = dict(con.execute("SELECT application, MIN(batch) FROM profiles GROUP BY application"))
        for pd in sorted(p for p in rd.iterdir() if p.is_dir() and p.name in ALL_PAIRS and p.name in batches):
            if not (pd / "meta.json").exists():
                continue
            npd = nd / pd.name
            npd.mkdir(exist_ok=True)
            a, b = list(ALL_PAIRS[pd.name][0])
            r = subprocess.run([QUIHO, "profile", f"{pd.name}@{a}", f"{pd.name}@{b}", "--spec", str(pd / "spec.yml"),
                                "--batch", batches[pd.name], "--store", str(store), "--report", str(npd)],
                               capture_output=True, text=True, check=False)
            (npd / "stdout.txt").write_text(r.stdout)
            (npd / "stderr.txt").write_text(r.stderr)
            (npd / "meta.json").write_text((pd / "meta.json").read_text())
            print(f"panel: reanalysed {rd.name} {pd.name}: rc {r.returncode}", file=sys.stderr)
    table(into)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/quiho-panel"))
    ap.add_argument("--pairs", default=",".join(PAIRS), help="comma-separated names of PAIRS and SELF_PAIRS "
                    "(default: PAIRS; --pairs self: the ten self-pairs)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--first", type=int, default=1, help="number of the first run (run-N: a fresh store each)")
    ap.add_argument("--table", type=Path, help="print the table of an earlier --out and run nothing")
    ap.add_argument("--reanalyse", type=Path, help="analyse an earlier --out's runs again (nothing measured)")
    ap.add_argument("--into", type=Path, help="with --reanalyse: where the new outputs go")
    args = ap.parse_args()
    if args.reanalyse:
        if not args.into or args.into.resolve() == args.reanalyse.resolve():
            sys.exit("panel: --reanalyse needs --into, a directory other than the runs'")
        reanalyse(args.reanalyse, args.into)
        return
    if args.table:
        table(args.table)
        return
    names = list(SELF_PAIRS) if args.pairs == "self" else [p for p in args.pairs.split(",") if p]
    unknown = [p for p in names if p not in ALL_PAIRS]
    if unknown:
        sys.exit(f"panel: unknown pair(s) {', '.join(unknown)}; known: {', '.join(ALL_PAIRS)}")
    rewritten = [f"{p}@{v}" for p in names for v, cmd in ALL_PAIRS[p][0].items() if not _unexpanded(cmd)]
    if rewritten:
        sys.exit(f"panel: {', '.join(rewritten)} ran with $NAME expanded from the controller's environment before "
                 "25b987c, so new runs would not run what its earlier ones did; register a new pair")
    run(args.out, names, args.runs, args.first)


if __name__ == "__main__":
    main()
