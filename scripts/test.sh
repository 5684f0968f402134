#!/usr/bin/env bash
# One command from a fresh clone: install, lint, type-check, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin/python
"$PY" -m ruff check quiho tests bench
"$PY" -m mypy
exec "$PY" -m pytest "$@"
