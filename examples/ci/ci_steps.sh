#!/usr/bin/env bash
# The steps of benchmark.yml, runnable anywhere: benchmark -> import -> detect (alerts) -> Markdown summary -> site.
#   STORE      the quiho store that carries the history and its alerts between runs (default .quiho/ci.db)
#   REVISION   the revision measured (default: git HEAD where result.json lies)
#   BASE       on a pull request: its merge base; the PR is compared with main's level there, no alert is kept
#   QUIHO      the quiho command (default: quiho)
#   PYTHON     the interpreter for bench.py (default: python3)
#   SITE       where the static site of the whole store goes (default: site/; deploy it to any static host)
# Writes the Markdown (verdicts, then the open alerts with age and state) to $GITHUB_STEP_SUMMARY when set
# (GitHub Actions), else to summary.md.
# Exit status: 3 while an alert is new (acknowledge it: quiho history alert ack ID) or, with BASE, when the PR
# regresses; 0 otherwise, 1 on an error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
store=${STORE:-.quiho/ci.db}
quiho=${QUIHO:-quiho}
summary=${GITHUB_STEP_SUMMARY:-summary.md}
mkdir -p "$(dirname "$store")"

"${PYTHON:-python3}" "$here/bench.py" > result.json
$quiho history import result.json --store "$store" ${REVISION:+--revision "$REVISION"}
# one run: raises, follows and closes alerts, writes the summary; its exit status (3 while an alert is new) is the
# job's, after the site is written
status=0
$quiho history detect --all --store "$store" ${BASE:+--base "$BASE"} --format markdown --fail-on-change \
    >> "$summary" || status=$?
# the static site (series, change points, fleet, profiles), also when the gate failed, so a regression is on the
# site too; republishing into the same folder rewrites only the pages whose data changed
$quiho publish "${SITE:-site}" --store "$store" --title "benchmarks" > /dev/null
exit "$status"
