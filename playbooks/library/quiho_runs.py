#!/usr/bin/python
"""quiho_runs: run one argv once per item, back to back, and return every run as the command module would.

One module run per visit instead of one per repetition and two around them (``ansible.builtin.command`` in a loop
pays Ansible's module start-up before every run, and the emulation's start and stop tasks one each). Each run is
started as the command module starts it with ``expand_argument_vars: false`` (an argv exactly as written, no shell
and nothing expanded: ``$NAME`` in a ``sh -c`` script is the shell's, not the controller's; default SIGPIPE; the
module's stdin and environment) and comes back with its fields: ``rc``, ``stdout``, ``stderr``
(trailing newlines stripped), ``start``, ``end``, ``delta``, plus ``item``. Its output is collected with
:meth:`subprocess.Popen.communicate`, not ``AnsibleModule.run_command``: run_command's select loop tests ``poll()``
twice after the pipes close, and a child that exits between the two calls leaves it in a one-second ``select`` on
no pipes, which the run's wall time (the ``runtime`` metric) then includes. A run still going ``guard_s`` seconds
after its start is killed (its process group when it leads one, as coreutils ``timeout`` does) and reported with
``guard_killed``; the other runs are kept. With ``events_file``, each run also carries ``limit_events``: how much
the count in that file (written by the memory-capacity knob's watcher, playbooks/files/quiho-emulate.sh) rose
while it ran (read 50 ms after it ended, past the watcher's next look), so a run during which the group met its
memory limit is told apart.

Options: ``argv`` (list of str); ``items`` (list: one run each, returned as the run's ``item``); ``item_args``
(optional list of lists, one per item, appended to ``argv``); ``chdir`` (path); ``guard_s`` (float, 0 = none);
``before`` (argv run once first, e.g. the emulation's start: the runs only happen if it exits 0) and ``after``
(argv run once last, also after a failure: the emulation's stop), each within ``step_guard_s`` seconds;
``events_file`` (path, "" = none; a missing or unreadable file counts 0); ``settle_s`` and ``settle_item`` (the
item of that index starts no sooner than ``settle_s`` after ``before`` ended: a co-runner's settle spent on the
warm-up runs before it instead of waiting in ``before``). The task
fails without ``runs`` when ``chdir`` or ``before`` fails, and with them when ``after`` fails.

On the local connection the module inherits ansible-playbook's environment; there (``QUIHO_CALLER_ENV`` set, by
quiho/fleet/runner.py) every run gets the caller's environment instead (:func:`run_env`): a program under test
must not read Ansible's configuration, callbacks or interpreter, nor find Ansible's commands first on ``PATH``.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import threading
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text


def _kill(pid: int) -> None:
    try:
        if os.getpgid(pid) == pid:  # `timeout` (and what it started) leads its own group
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass  # already gone


#: Seconds to wait after a run before reading ``events_file``: past the memory watcher's next look (every 20 ms).
WATCHER_LOOK_S = 0.05


def _count(path: str) -> int:
    """The number in ``path``; 0 when there is none (no file, not yet written, no number)."""
    try:
        with open(path) as fh:
            return int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0


#: The caller's ``PATH`` and own variables of :data:`RUNNER_PREFIXES`, as JSON (quiho/fleet/runner.py's caller_env).
CALLER_ENV = "QUIHO_CALLER_ENV"
RUNNER_PREFIXES = ("ANSIBLE_", "AWX_", "RUNNER_")


def run_env(environ: dict[str, str]) -> dict[str, str] | None:
    """The environment of every run: the caller's where :data:`CALLER_ENV` says it, else None (the module's own).

    Every variable named by :data:`RUNNER_PREFIXES` is removed and the caller's ``PATH`` and own such variables put
    back; over SSH the module's environment is the host's, not the controller's, and is left as it is.
    """
    raw = environ.get(CALLER_ENV)
    if raw is None:
        return None
    try:
        caller = json.loads(raw)
    except ValueError:
        return None
    env = {k: v for k, v in environ.items() if not k.startswith(RUNNER_PREFIXES) and k != CALLER_ENV}
    env.update({str(k): str(v) for k, v in caller.items()})
    return env


def _one(module: AnsibleModule, argv: list[str], item: object, guard_s: float, cwd: str | None = None,
         events_file: str = "", env: dict[str, str] | None = None) -> dict[str, object]:
    fired: list[bool] = []
    before = _count(events_file) if events_file else 0
    start = datetime.datetime.now()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
                                env=env)
    except OSError as exc:
        module.fail_json(msg=f"cannot run {argv[0]!r}: {exc}", rc=exc.errno, stdout="", stderr="")
    guard = threading.Timer(guard_s, lambda: (fired.append(True), _kill(proc.pid))) if guard_s > 0 else None
    if guard is not None:
        guard.daemon = True
        guard.start()
    out, err = proc.communicate()  # returns when both pipes are closed and the child is reaped
    end = datetime.datetime.now()
    rc = proc.returncode
    if guard is not None:
        guard.cancel()
    run = {"item": item, "rc": rc, "stdout": to_text(out).rstrip("\r\n"), "stderr": to_text(err).rstrip("\r\n"),
           "start": to_text(start), "end": to_text(end), "delta": to_text(end - start), "guard_killed": bool(fired)}
    if events_file:
        time.sleep(WATCHER_LOOK_S)  # the watcher's next look, so a meeting near the end counts for this run
        run["limit_events"] = max(0, _count(events_file) - before)
    return run


def _step(module: AnsibleModule, name: str, argv: list[str], guard_s: float) -> str | None:
    """Run ``before`` or ``after``; why it failed, or None."""
    if not argv:
        return None
    r = _one(module, argv, name, guard_s)
    if r["rc"] == 0 and not r["guard_killed"]:
        return None
    how = f"killed after {guard_s:g} s" if r["guard_killed"] else f"rc {r['rc']}"
    return f"{name} failed ({how}): {str(r['stderr'] or r['stdout']).strip()[-500:]}"


def main() -> None:
    """Run ``before``, then ``argv`` (+ ``item_args``) once per item of ``items`` in ``chdir``, then ``after``."""
    module = AnsibleModule(argument_spec={
        "argv": {"type": "list", "elements": "str", "required": True},
        "items": {"type": "list", "elements": "raw", "required": True},
        "item_args": {"type": "list", "elements": "list"},
        "chdir": {"type": "path"},
        "guard_s": {"type": "float", "default": 0.0},
        "before": {"type": "list", "elements": "str", "default": []},
        "after": {"type": "list", "elements": "str", "default": []},
        "step_guard_s": {"type": "float", "default": 60.0},
        "events_file": {"type": "str", "default": ""},
        "settle_s": {"type": "float", "default": 0.0},
        "settle_item": {"type": "int", "default": 0},
    })
    p = module.params
    items, extra = p["items"], p["item_args"]
    if extra is not None and len(extra) != len(items):
        module.fail_json(msg=f"item_args has {len(extra)} entries for {len(items)} items")
    # the runs start in chdir; before and after where the module started (the co-runner must not hold chdir)
    if p["chdir"] and not os.path.isdir(p["chdir"]):
        module.fail_json(msg=f"Unable to change directory before execution: {p['chdir']} is not a directory")
    runs: list[dict[str, object]] = []
    env = run_env(dict(os.environ))
    why = _step(module, "before", list(p["before"]), p["step_guard_s"])
    ready = time.monotonic()
    try:
        if why is None:
            for i, item in enumerate(items):
                if i == p["settle_item"] and p["settle_s"] > 0:
                    time.sleep(max(0.0, p["settle_s"] - (time.monotonic() - ready)))
                argv = list(p["argv"]) + ([str(a) for a in extra[i]] if extra is not None else [])
                runs.append(_one(module, argv, item, float(p["guard_s"]), p["chdir"], p["events_file"], env))
    finally:
        after = _step(module, "after", list(p["after"]), p["step_guard_s"])
    if why is not None:
        module.fail_json(msg=why + (f"; {after}" if after else ""))
    if after is not None:
        module.fail_json(msg=after, runs=runs)
    module.exit_json(changed=True, runs=runs)


if __name__ == "__main__":
    main()
