"""Run one playbook through ansible-runner, robust to dead hosts, and summarise it per host.

What makes a dead or cut-off host unable to hang the run:
the playbooks use ``strategy: free`` and task-level ``timeout:``; ssh gets
``ServerAliveInterval``/``ServerAliveCountMax``/``ConnectTimeout``; every
invocation gets a fresh ``ANSIBLE_SSH_CONTROL_PATH_DIR`` (a reused ControlPersist
master keeps its old options); an outer deadline cancels the run, and afterwards
every process still referring to this invocation's private directory
(ansible-playbook, its workers, ssh mux masters) is killed by PID.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quiho.fleet.inventory import ansible_links, repo_root

__all__ = [
    "HostOutcome",
    "PlaybookResult",
    "FleetEvent",
    "EventLog",
    "Invocation",
    "run_playbook",
    "unsafe_yaml",
    "playbooks_dir",
    "reap_processes",
    "reap_cwd",
]

#: ssh options for every invocation (replace Ansible's defaults, so ControlMaster/Persist are restated).
SSH_ARGS = (
    "-o ControlMaster=auto -o ControlPersist=30s -o ServerAliveInterval=2 -o ServerAliveCountMax=3 "
    "-o ConnectTimeout=10"
)


#: Ansible's internal poll interval (s) for hosts that share this machine: at Ansible's default, 0.001 s,
#: ansible-playbook's strategy loop spins on the CPUs the hosts measure with. Ansible reads this setting from a
#: config file only (no environment variable), so such invocations get a config file of their own
#: (:func:`poll_config`).
SHARED_MACHINE_POLL_S = 0.05


def control_prefix() -> str:
    """Name prefix of the per-run ssh control-path directories (tagged by ``$QUIHO_RUN_DIR`` when set)."""
    root = os.environ.get("QUIHO_RUN_DIR")
    return "qhcp-" + (hashlib.sha1(root.encode()).hexdigest()[:8] if root else "x")


def playbooks_dir() -> Path:
    """``playbooks/`` of this checkout."""
    return repo_root() / "playbooks"


@dataclass(frozen=True)
class FleetEvent:
    """A progress event for displays: ``kind`` is task, ok, failed, unreachable, done or item."""

    kind: str
    host: str | None = None
    task: str | None = None
    message: str | None = None


@dataclass
class HostOutcome:
    """How one host's part of a playbook ended: ok, failed, unreachable or timeout."""

    name: str
    status: str = "running"
    reason: str | None = None
    done: bool = False


@dataclass
class PlaybookResult:
    """Outcome of one ansible-runner invocation."""

    status: str
    rc: int | None
    hosts: dict[str, HostOutcome]
    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    elapsed_s: float = 0.0
    reaped: int = 0

    def items(self, task: str) -> list[dict[str, Any]]:
        """``event_data`` of every loop item (or plain result) of the task named ``task``, in order."""
        out = []
        for ev in self.events:
            data = ev.get("event_data") or {}
            if data.get("task") != task:
                continue
            if ev.get("event") in ("runner_item_on_ok", "runner_item_on_failed"):
                out.append(data)
            elif ev.get("event") in ("runner_on_ok", "runner_on_failed") and "results" not in (data.get("res") or {}):
                out.append(data)
        return out

    def runs(self, task: str) -> list[dict[str, Any]]:
        """One ``{"host", "res"}`` per run of the ``quiho_runs`` task named ``task`` (playbooks/library), in order.

        ``res`` has the command module's fields (``rc``, ``stdout``, ``stderr``, ``start``, ``end``, ``delta``)
        and the run's ``item``, as a loop item of ``ansible.builtin.command`` had.
        """
        return [{"host": data.get("host"), "res": run}
                for data in self.items(task) for run in (data.get("res") or {}).get("runs") or []]


def _msg(res: dict[str, Any] | None) -> str:
    if not res:
        return ""
    for key in ("stderr", "module_stderr", "msg", "stdout"):
        v = res.get(key)
        if v:
            return str(v).strip().splitlines()[-1][:300] if str(v).strip() else ""
    return ""


#: How Ansible's ssh connection says it lost the host; ansible-core 2.16 sends it as a task failure when the host
#: goes away during a task, 2.19 as the host unreachable.
_SSH_LOST = "Failed to connect to the host via ssh"


def _lost(res: Any) -> bool:
    """Whether a failed task's result says the connection to the host was lost (so the host is unreachable)."""
    return isinstance(res, dict) and (res.get("unreachable") is True or str(res.get("msg", "")).startswith(_SSH_LOST))


class EventLog:
    """Turns ansible-runner events into per-host outcomes and progress events (no I/O: testable on recorded events).

    A host is ``ok`` when it reached the playbooks' final ``quiho done`` task without a
    failure, ``failed`` on a task failure (not ``ignore_errors``) or when it never got to
    the end, ``unreachable`` when Ansible lost it, ``timeout`` when the outer deadline
    cancelled the run while the host was still running.
    """

    def __init__(self, on_event: Callable[[FleetEvent], None] | None = None) -> None:
        self.hosts: dict[str, HostOutcome] = {}
        self.events: list[dict[str, Any]] = []
        self._on_event = on_event

    def _host(self, name: str) -> HostOutcome:
        if name not in self.hosts:
            self.hosts[name] = HostOutcome(name)
        return self.hosts[name]

    def _emit(self, ev: FleetEvent) -> None:
        if self._on_event is not None:
            self._on_event(ev)

    def __call__(self, ev: dict[str, Any]) -> bool:
        """ansible-runner's ``event_handler``: record ``ev``; True keeps it in the artifacts."""
        self.events.append(ev)
        kind = ev.get("event")
        data = ev.get("event_data") or {}
        name = data.get("host")
        task = data.get("task")
        if not name:
            return True
        if kind == "runner_on_start":
            self._host(name)
            self._emit(FleetEvent("task", name, task))
        elif kind == "runner_on_unreachable" or (
                kind == "runner_on_failed" and not data.get("ignore_errors") and _lost(data.get("res"))):
            h = self._host(name)
            h.status, h.reason = "unreachable", f"{task}: {_msg(data.get('res'))}"
            self._emit(FleetEvent("unreachable", name, task, h.reason))
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            h = self._host(name)
            if h.status != "unreachable":
                h.status, h.reason = "failed", f"{task}: {_msg(data.get('res'))}"
            self._emit(FleetEvent("failed", name, task, h.reason))
        elif kind == "runner_on_ok" and task == "quiho done":
            h = self._host(name)
            h.done = True
            if h.status == "running":
                h.status = "ok"
            self._emit(FleetEvent("done", name, task))
        elif kind == "runner_item_on_ok":
            self._emit(FleetEvent("item", name, task))
        return True

    def result(
        self, status: str, rc: int | None, *, cancelled: bool, timeout_s: float, elapsed_s: float = 0.0,
        reaped: int = 0,
    ) -> PlaybookResult:
        """The :class:`PlaybookResult` of the events seen (hosts still running get their final status)."""
        for h in self.hosts.values():
            if h.status == "running":
                if cancelled:
                    h.status, h.reason = "timeout", f"outer timeout of {timeout_s:g} s: run cancelled"
                elif not h.done:
                    h.status, h.reason = "failed", h.reason or "did not reach the end of the play"
        return PlaybookResult(status="timeout" if cancelled else status, rc=rc, hosts=self.hosts, events=self.events,
                              timed_out=cancelled, elapsed_s=elapsed_s, reaped=reaped)


def _tag_whole_document() -> bool:
    """True where ansible-core keeps an ``!unsafe`` mapping's strings (2.19 on), False where each ``!unsafe`` string."""
    from ansible.release import __version__

    major, minor = (int(x) for x in re.findall(r"\d+", __version__)[:2])
    return (major, minor) >= (2, 19)


def unsafe_yaml(value: Any, *, whole: bool | None = None) -> str:
    """``value`` as YAML that Ansible reads back as it is, strings as strings and none of them templated.

    Extra variables carry user data (application argv, paths, job files); a ``{{ ... }}``
    in them must reach the host literally instead of being evaluated on the controller.
    ansible-core 2.19 resolves an ``!unsafe`` string's type from its text (``!unsafe "true"`` is a boolean,
    ``"007"`` the integer 7) but keeps the strings of an ``!unsafe`` mapping; earlier versions keep an
    ``!unsafe`` string but lose the nested lists and mappings of an ``!unsafe`` mapping. So the whole document is
    tagged for 2.19 and later (``whole``: default by the installed version), each string before.
    JSON is YAML, and its string escapes are valid in YAML double-quoted scalars.
    """
    if whole is None:
        whole = _tag_whole_document()
    if whole:
        _check_types(value)
        return "!unsafe " + json.dumps(value)
    if isinstance(value, str):
        return "!unsafe " + json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {unsafe_yaml(v, whole=False)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(unsafe_yaml(v, whole=False) for v in value) + "]"
    _check_types(value)
    return json.dumps(value)


def _check_types(value: Any) -> None:
    """Raise TypeError for anything but str, int, float, bool, None and dicts, lists and tuples of them."""
    if isinstance(value, dict):
        for v in value.values():
            _check_types(v)
    elif isinstance(value, list | tuple):
        for v in value:
            _check_types(v)
    elif not (value is None or isinstance(value, str | bool | int | float)):
        raise TypeError(f"extra variable of type {type(value).__name__} cannot be passed to Ansible")


def reap_processes(marker: str) -> list[int]:
    """Kill (SIGKILL, by PID) every process whose command line contains ``marker``; return their PIDs.

    ``marker`` is a unique per-invocation directory, so only processes this
    invocation started can match. Zombies are skipped (they are already dead).
    """
    me = os.getpid()
    killed: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and state != "Z":
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
            except ProcessLookupError:
                pass
    return killed


def reap_cwd(prefix: str) -> int:
    """Kill (SIGKILL, by PID) every live process whose working directory is under ``prefix``.

    The measurement runs below a per-run remote directory; on hosts that share the
    controller's machine (local connection, network namespaces) this finds what a
    cancelled run left behind: coreutils ``timeout`` puts the stressors in their own
    process group, so killing ansible's group does not reach them.
    """
    me = os.getpid()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == prefix or cwd.startswith(prefix.rstrip("/") + "/"):
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


def _active_config() -> Path | None:
    """The config file ansible-playbook would read under ansible-runner (whose cwd is ``playbooks/``, none there)."""
    env = os.environ.get("ANSIBLE_CONFIG")
    candidates = [Path(env) / "ansible.cfg" if env and Path(env).is_dir() else Path(env)] if env else []
    candidates += [Path.home() / ".ansible.cfg", Path("/etc/ansible/ansible.cfg")]
    return next((c for c in candidates if c.is_file()), None)


def poll_config(dest: Path, poll_s: float) -> Path | None:
    """Write ``dest``: the active Ansible config (if any) with ``internal_poll_interval = poll_s``; return it.

    The user's settings are kept (the file is copied option by option); a config that cannot be parsed is left
    alone and None is returned (the run then uses Ansible's default interval: noisier, nothing lost).
    """
    cfg = configparser.ConfigParser(interpolation=None)
    src = _active_config()
    try:
        if src is not None:
            cfg.read(src)
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    if not cfg.has_section("defaults"):
        cfg.add_section("defaults")
    cfg.set("defaults", "internal_poll_interval", str(poll_s))
    with open(dest, "w") as fh:
        cfg.write(fh)
    return dest


#: Variables of Ansible, ansible-runner and quiho's runner in ansible-playbook's environment; a program started on
#: the local connection inherits them unless playbooks/library/quiho_runs.py gives it :func:`caller_env` instead.
RUNNER_PREFIXES = ("ANSIBLE_", "AWX_", "RUNNER_")


def caller_env() -> str:
    """JSON of the caller's ``PATH`` and :data:`RUNNER_PREFIXES` variables, which ansible-playbook's replace."""
    kept = {k: v for k, v in os.environ.items() if k.startswith(RUNNER_PREFIXES)}
    return json.dumps({"PATH": os.environ.get("PATH") or os.defpath, **kept}, sort_keys=True)


def _envvars(cp_dir: Path, host_key_checking: bool, python_interpreter: str, path: str) -> dict[str, str]:
    return {
        "QUIHO_CALLER_ENV": caller_env(),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(cp_dir),
        "ANSIBLE_SSH_ARGS": SSH_ARGS,
        "ANSIBLE_TIMEOUT": "10",
        "ANSIBLE_HOST_KEY_CHECKING": "True" if host_key_checking else "False",
        "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
        "ANSIBLE_SYSTEM_WARNINGS": "False",
        "ANSIBLE_PYTHON_INTERPRETER": python_interpreter,
        "PATH": path,
    }


@dataclass(frozen=True)
class Invocation:
    """How one ``ansible-playbook`` invocation runs (everything but what it runs and where).

    Attributes
    ----------
    limit : tuple of str, optional
        Only these hosts.
    forks : int, default 1
        Parallel hosts. Keep 1 when hosts share hardware (netns, local fleet): parallel forks distort what each
        host measures.
    timeout_s : float, default 3600
        Outer deadline; past it the run is cancelled and its process tree killed.
    host_key_checking : bool, default True
        SSH host-key checking. False only through an explicitly named opt-in of the caller.
    python_interpreter : str, default "auto_silent"
        Ansible's ``interpreter_python`` (a host's ``ansible_python_interpreter`` still wins).
    poll_s : float, optional
        Ansible's internal poll interval (:data:`SHARED_MACHINE_POLL_S` for hosts on this machine); default
        Ansible's own.
    keep_dir : Path, optional
        Where to copy the artifacts (job events) for later inspection; not ansible-runner's ``command`` file, which
        holds the whole environment (a store password among it).
    """

    limit: tuple[str, ...] | None = None
    forks: int = 1
    timeout_s: float = 3600.0
    host_key_checking: bool = True
    python_interpreter: str = "auto_silent"
    poll_s: float | None = None
    keep_dir: Path | None = None


def run_playbook(
    playbook: str,
    inventory: str | os.PathLike[str],
    extravars: dict[str, Any],
    how: Invocation = Invocation(),
    on_event: Callable[[FleetEvent], None] | None = None,
) -> PlaybookResult:
    """Run ``playbooks/<playbook>`` on ``inventory`` and return per-host outcomes and all events.

    Callers normally go through :class:`quiho.fleet.session.FleetSession`, which adds host
    grouping, the machine lock and cleanup around this.

    Parameters
    ----------
    playbook : str
        File name under ``playbooks/``.
    inventory : path-like
        Inventory file or directory.
    extravars : dict
        Extra variables; every string is passed ``!unsafe`` (:func:`unsafe_yaml`), never templated.
    how : Invocation
        Hosts, forks, deadline, host-key checking, interpreter, poll interval, artifacts.
    on_event : callable, optional
        Receives :class:`FleetEvent` s for progress displays.

    Returns
    -------
    PlaybookResult
        Also when the run was cancelled by the deadline (``timed_out``); an interrupt
        (``KeyboardInterrupt``) propagates after the process tree was killed.
    """
    import ansible_runner

    from quiho.fleet.shutdown import reap_children

    # $QUIHO_RUN_DIR lets a caller (tests) find every process of its own runs by path.
    run_root = os.environ.get("QUIHO_RUN_DIR")
    if run_root:
        Path(run_root).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="qh-run-", dir=run_root or None))
    # ssh's ControlPath is <dir>/<40 hex> and must fit a Unix socket path (108 bytes): keep it short.
    cp_dir = Path(tempfile.mkdtemp(prefix=f"{control_prefix()}-", dir="/tmp"))
    (work / "env").mkdir()
    (work / "env" / "extravars").write_text(unsafe_yaml(extravars) + "\n")
    envvars = _envvars(cp_dir, how.host_key_checking, how.python_interpreter, ansible_links(work / "bin"))
    cfg = poll_config(work / "ansible.cfg", how.poll_s) if how.poll_s is not None else None
    if cfg is not None:
        envvars["ANSIBLE_CONFIG"] = str(cfg)
    log = EventLog(on_event)
    deadline = time.monotonic() + how.timeout_s
    t0 = time.monotonic()
    cancelled = False

    def cancel() -> bool:
        nonlocal cancelled
        if time.monotonic() > deadline:
            cancelled = True
        return cancelled

    try:
        r = ansible_runner.run(
            private_data_dir=str(work),
            project_dir=str(playbooks_dir()),
            playbook=playbook,
            inventory=str(Path(inventory).resolve()),
            limit=",".join(how.limit) if how.limit else None,
            forks=how.forks,
            quiet=True,
            envvars=envvars,
            event_handler=log,
            cancel_callback=cancel,
            ident="run",
        )
        status, rc = str(r.status), r.rc
    finally:
        # ansible-runner kills the ansible-playbook process group on cancel (not on an interrupt), and ssh
        # mux masters daemonise into their own session: find everything that names our dirs.
        killed = reap_processes(str(work)) + reap_processes(str(cp_dir))
        if killed:
            time.sleep(0.05)
        reap_children(killed)
        if how.keep_dir is not None:
            shutil.copytree(work / "artifacts", how.keep_dir, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("command"))
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(cp_dir, ignore_errors=True)
    return log.result(status, rc, cancelled=cancelled, timeout_s=how.timeout_s, elapsed_s=time.monotonic() - t0,
                      reaped=len(killed))
