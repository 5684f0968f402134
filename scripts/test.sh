#!/usr/bin/env bash
# One command from a fresh clone: install, lint, type-check, run the whole test suite.
# The suite runs in two parts. Tests that measure the machine, time code or own a machine-wide resource (markers
# root, stressng, netns, bpftrace, quiet) run one at a time, last, as a measurement needs a quiet machine. The
# rest (about 1,280 tests that compute, parse, render or talk to their own PostgreSQL server) run first, two at
# a time (pytest-xdist). The exit code is non-zero if either part fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin/python
"$PY" -m ruff check quiho tests bench
"$PY" -m mypy
SERIAL="root or stressng or netns or bpftrace or quiet"
# pytest exits 5 when a part selects no test (e.g. a path holding only one kind): that part did not fail
set +e
"$PY" -m pytest -n 2 -m "not ($SERIAL)" "$@"
light=$?
# the slowest serial tests are listed: they set the suite's wall time (CI's budget is ~40 min on 2 cores)
"$PY" -m pytest -m "$SERIAL" --durations=15 "$@"
serial=$?
set -e
[ "$light" = 5 ] && [ "$serial" != 5 ] && light=0
[ "$serial" = 5 ] && [ "$light" != 5 ] && serial=0
if [ "$light" != 0 ]; then
  echo "test: the parallel part failed (exit $light): its summary is the one before the serial part's" >&2
  exit "$light"
fi
exit "$serial"
