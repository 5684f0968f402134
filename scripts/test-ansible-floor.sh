#!/usr/bin/env bash
# The tests where ansible-core's versions differ, again on the oldest ansible-core pyproject.toml allows, in a
# virtual environment of its own (.venv-ansible-X.Y): ansible-core 2.19 changed the types of the extra
# variables quiho passes a playbook and how a host lost during a task is reported. .ci/run runs it after
# scripts/test.sh. The netns tests need root and skip with their reason without it.
set -euo pipefail
cd "$(dirname "$0")/.."
FLOOR=$(sed -n 's/.*"ansible-core>=\([0-9][0-9.]*\)".*/\1/p' pyproject.toml)
[ -n "$FLOOR" ] || { echo "test-ansible-floor: no ansible-core>=X.Y in pyproject.toml" >&2; exit 2; }
VENV=.venv-ansible-$FLOOR
[ -x "$VENV/bin/python" ] || "${PYTHON:-python3}" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e . "ansible-core==$FLOOR.*" pytest pytest-timeout
"$VENV/bin/python" -c "from ansible.release import __version__ as v; print(f'test-ansible-floor: ansible-core {v}')"
"$VENV/bin/python" -m pytest -p no:cacheprovider tests/fleet/test_unsafe_vars.py tests/fleet/test_app_env.py \
  tests/fleet/test_events.py tests/app/test_quiho_runs.py tests/fleet/test_fleet_netns.py "$@"
