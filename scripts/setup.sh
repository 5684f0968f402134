#!/usr/bin/env bash
# Installs everything quiho needs on a fresh Debian 12 machine (idempotent).
# System packages need root; without root they are reported, not installed.
# Python packages go into a virtual environment, .venv (PEP 668: Debian's own python3 is "externally managed"
# and refuses a system-wide pip install). PYTHON picks the interpreter the venv is made from (default python3).
# `setup.sh run` installs what quiho runs (scripts/demo.sh); no argument adds the dev extras (tests, lint, docs)
# and the system packages the tests use.
set -euo pipefail
WHAT=${1:-dev}
case $WHAT in run|dev) ;; *) echo "setup: unknown argument '$WHAT' (run | dev)" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."

# What the main job needs (stress-ng, the network knob's ip/tc, the examples' gcc); the tests and the docs' checks
# add sshd hosts, bpftrace, headless Chromium and a PostgreSQL server.
APT_PKGS=(stress-ng iproute2 gcc make procps python3-venv)
[ "$WHAT" = dev ] && APT_PKGS+=(openssh-server bpftrace chromium postgresql)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: not root; please install: ${missing[*]} (tests that need them will skip with a reason)" >&2
  fi
fi

BASE=${PYTHON:-python3}
VENV=.venv
PY=$VENV/bin/python
# A venv made from another interpreter (PYTHON changed) is rebuilt, not reused.
want=$("$BASE" -c 'import sys; print(sys.base_prefix, sys.version_info[:3])')
if [ -x "$PY" ] && [ "$("$PY" -c 'import sys; print(sys.base_prefix, sys.version_info[:3])' 2>/dev/null)" != "$want" ]; then
  echo "setup: $VENV was made from another Python; rebuilding it from $BASE" >&2
  rm -rf "$VENV" .quiho-installed
fi
if [ ! -x "$PY" ]; then
  echo "setup: creating $VENV from $BASE" >&2
  "$BASE" -m venv "$VENV"
  rm -f .quiho-installed
fi
# -P: do not put the current directory on sys.path, so an install of another checkout (or none) is noticed
# instead of this directory's quiho/ being imported by accident.
SPEC=".[dev]"
CHECK="import os, quiho, pytest, mkdocs, sklearn, ansible_runner"
# run: no byte-compiling at install (half of pip's time); Python compiles what it imports, when it first does
COMPILE=()
if [ "$WHAT" = run ]; then SPEC="."; CHECK="import os, quiho, sklearn, ansible_runner"; COMPILE=(--no-compile); fi
# .quiho-installed holds what was installed last: "dev" covers "run", not the other way round.
had=$(cat .quiho-installed 2>/dev/null || true)
if ! "$PY" -P -c "$CHECK
assert os.path.samefile(os.path.dirname(quiho.__file__), 'quiho')" 2>/dev/null \
   || [ pyproject.toml -nt .quiho-installed ] 2>/dev/null || { [ "$WHAT" = dev ] && [ "$had" != dev ]; }; then
  echo "setup: $PY -m pip install -e $SPEC" >&2
  "$PY" -m pip install -q --disable-pip-version-check --upgrade pip
  "$PY" -m pip install -q --disable-pip-version-check "${COMPILE[@]}" -e "$SPEC"
  if [ "$had" = dev ]; then touch .quiho-installed; else echo "$WHAT" > .quiho-installed; fi
  # ...except what every ansible-playbook start imports: the main job starts ~32, and where Python may not write
  # bytecode (PYTHONDONTWRITEBYTECODE) each compiled these again (0.3 s a start; compiling them here takes ~1 s)
  if [ "$WHAT" = run ]; then
    "$PY" -P -c "import compileall, os, ansible, cryptography, jinja2, markupsafe, packaging, yaml
for m in (ansible, cryptography, jinja2, markupsafe, packaging, yaml):
    compileall.compile_dir(os.path.dirname(m.__file__), quiet=1, workers=0)"
  fi
fi
# Compile the batched IRUP engine's numba kernels now (cached on disk next to the source, in
# quiho/irup/__pycache__, or in NUMBA_CACHE_DIR), so the first `quiho irup` loads them instead of compiling.
# A cache that is already current is only loaded.
echo "setup: warming the numba cache of quiho/irup/batched.py" >&2
"$PY" -c "from quiho.irup.batched import warm; warm()"
# Write the install's dirty pages back now: the kernel's flusher would write them (a fresh venv's ~800 MiB) 15-30 s
# later, during what the main job measures first, its calibration's probes.
sync
