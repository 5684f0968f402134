#!/usr/bin/env bash
# One command from a fresh clone: install and run quiho's main job on the embedded default.
# Today: import the quiho paper's CloudLab data and print the IRUP of hpccg with its validity verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
DATA=${QUIHO_POPPER_CSV:-../shared/data/quiho-popper/pipelines/single-node/datapackage/quiho/results.csv}
export QUIHO_STORE=${QUIHO_STORE:-.quiho/quiho.db}
quiho import quiho-popper "$DATA"
quiho irup hpccg --plot .quiho/hpccg-irup.png
