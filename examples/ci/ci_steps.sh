#!/usr/bin/env bash
# The steps of benchmark.yml, runnable anywhere: benchmark -> import -> detect -> Markdown summary.
#   STORE      the quiho store that carries the history between runs (default .quiho/ci.db)
#   REVISION   the revision measured (default: git HEAD where result.json lies)
#   QUIHO      the quiho command (default: quiho)
#   PYTHON     the interpreter for bench.py (default: python3)
#   SITE       where the static site of the whole store goes (default: site/; deploy it to any static host)
# Writes the Markdown to $GITHUB_STEP_SUMMARY when set (GitHub Actions), else to summary.md.
# Exit status: 3 when the newest revision regresses one series, 0 otherwise, 1 on an error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
store=${STORE:-.quiho/ci.db}
quiho=${QUIHO:-quiho}
summary=${GITHUB_STEP_SUMMARY:-summary.md}
mkdir -p "$(dirname "$store")"

"${PYTHON:-python3}" "$here/bench.py" > result.json
$quiho history import result.json --store "$store" ${REVISION:+--revision "$REVISION"}
$quiho history detect --all --store "$store" --format markdown >> "$summary"
# the static site (series, change points, fleet, profiles): published before the verdict can fail the job, so a
# regression is on the site too; republishing into the same folder rewrites only the pages whose data changed
$quiho publish "${SITE:-site}" --store "$store" --title "benchmarks" > /dev/null
$quiho history detect --all --store "$store" --fail-on-change > /dev/null
