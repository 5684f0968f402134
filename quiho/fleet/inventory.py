"""Load any Ansible inventory (file or directory) into validated, typed data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sysconfig
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from quiho.errors import InventoryError

__all__ = ["FleetHost", "Inventory", "load_inventory", "local_inventory_path", "repo_root"]

_HOSTNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def repo_root() -> Path:
    """The checkout quiho runs from (``playbooks/`` and ``inventories/`` live there)."""
    return Path(__file__).resolve().parents[2]


def local_inventory_path() -> Path:
    """``inventories/local.yml``: the embedded local fleet."""
    return repo_root() / "inventories" / "local.yml"


class FleetHost(BaseModel):
    """One inventory host and the quiho variables it may set."""

    model_config = ConfigDict(frozen=True)

    name: str
    groups: tuple[str, ...] = ()
    connection: str = "ssh"
    address: str | None = None
    cpu_quota_pct: int = Field(100, ge=1, le=100)
    #: stream/vm: memory co-runners; cpu: a compute co-runner (the core-sharing knob).
    corunner: Literal["none", "stream", "vm", "cpu"] = "none"
    thp: Literal["keep", "always", "never"] = "keep"
    prefault_mib: int = Field(0, ge=0, le=65536)
    #: The knobs of quiho.fleet.local.knobs: a write-IOPS limit ``MAJ:MIN:N`` on a disk (storage), seccomp rules
    #: every system call passes (kernel entry), the loopback's shaping ``rate:MBIT``/``delay:US`` (network).
    write_iops: str = Field("0", pattern=r"^(0|[0-9]+:[0-9]+:[1-9][0-9]*)$")
    syscall_rules: int = Field(0, ge=0, le=4000)
    net: str = Field("0", pattern=r"^(0|rate:[1-9][0-9]*|delay:[1-9][0-9]*)$")
    mem_cache_mib: int = Field(0, ge=0, le=1 << 20)
    #: CFS period of the quota, µs (quiho_cfs_period_us; the calibrated local fleet chooses it per machine).
    cfs_period_us: int = Field(20000, ge=1000, le=1000000)
    #: Known conditions the host was measured under (quiho_factors: {name: level}); a designed fleet's factors.
    factors: dict[str, str | float] = Field(default_factory=dict)
    #: The profile rounds (0-based) that visit this host (quiho_design_rounds); empty: every round. A screening
    #: design's fold-over hosts belong to its second round only.
    design_rounds: tuple[Annotated[int, Field(ge=0, le=15)], ...] = ()

    @property
    def emulated(self) -> bool:
        """True when the host is this machine under an emulated condition (local fleet)."""
        return (self.cpu_quota_pct < 100 or self.corunner != "none" or self.thp != "keep" or self.prefault_mib > 0
                or self.knobs_set)

    @property
    def knobs_set(self) -> bool:
        """True when the host sets a knob beyond the quota, page size and co-runner."""
        return self.write_iops != "0" or self.syscall_rules > 0 or self.net != "0" or self.mem_cache_mib > 0


class Inventory(BaseModel):
    """A parsed inventory: hosts in inventory order, with their groups."""

    model_config = ConfigDict(frozen=True)

    path: str
    hosts: tuple[FleetHost, ...]

    @property
    def names(self) -> list[str]:
        """Host names in inventory order."""
        return [h.name for h in self.hosts]

    def host(self, name: str) -> FleetHost:
        """The host called ``name``."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise InventoryError(f"inventory {self.path} has no host {name!r}")

    @property
    def shares_machine(self) -> bool:
        """True when hosts are emulated on the controller: they must be measured one invocation at a time."""
        return any(h.emulated for h in self.hosts)

    def design_vars(self) -> dict[str, dict[str, object]]:
        """Each host's known conditions: its emulation knobs when it is emulated, and its ``quiho_factors``.

        An empty mapping per host when the inventory names none (a real fleet without factor variables).
        """
        out: dict[str, dict[str, object]] = {}
        for h in self.hosts:
            row: dict[str, object] = {}
            if self.shares_machine:
                row.update(quiho_cpu_quota_pct=h.cpu_quota_pct, quiho_thp=h.thp, quiho_corunner=h.corunner)
                if any(x.knobs_set for x in self.hosts):
                    row.update(quiho_write_iops=h.write_iops, quiho_syscall_rules=h.syscall_rules, quiho_net=h.net,
                               quiho_mem_cache_mib=h.mem_cache_mib)
            if h.factors:
                row["quiho_factors"] = dict(h.factors)
            out[h.name] = row
        return out

    def first_version(self) -> dict[str, int]:
        """Which of two interleaved versions each host runs first (0: the first, 1: the second).

        On a fleet that shares this machine alternate hosts start with the second version, so a first-run effect
        (cold page cache, a fresh binary) cancels across hosts; real hosts all start with the first.
        """
        return {h: (i % 2 if self.shares_machine else 0) for i, h in enumerate(self.names)}


def tool_path() -> str:
    """Return ``$PATH`` with this interpreter's scripts directory first, for Ansible commands that start no program.

    ansible-core's commands (``ansible-inventory``, ``ansible-playbook``) are installed beside the Python that
    runs quiho; in a virtual environment that is not activated (``.venv/bin/quiho ...``) they are not on
    ``$PATH``. A playbook gets :func:`ansible_links` first instead, as what it starts inherits its ``PATH``.
    """
    scripts = sysconfig.get_path("scripts")
    path = os.environ.get("PATH") or os.defpath
    return path if scripts in path.split(os.pathsep) else scripts + os.pathsep + path


def ansible_links(directory: Path) -> str:
    """Link Ansible's commands beside this interpreter into ``directory``; return ``$PATH`` with it first.

    Only Ansible's commands: with the whole scripts directory first, every program a playbook starts on the local
    fleet (the application's setup and runs among them) would find quiho's own ``python3`` before the caller's.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for exe in sorted(Path(sysconfig.get_path("scripts")).glob("ansible*")):
        (directory / exe.name).symlink_to(exe)
    return str(directory) + os.pathsep + (os.environ.get("PATH") or os.defpath)


def load_inventory(path: str | os.PathLike[str] | Inventory | None = None) -> Inventory:
    """Parse an inventory with ``ansible-inventory --list`` and validate quiho's host variables.

    Parameters
    ----------
    path : path-like or Inventory, optional
        Inventory file or directory (any format Ansible reads); default ``inventories/local.yml``. An Inventory
        already loaded is returned as it is (each parse runs ``ansible-inventory``, ~0.5 s).

    Raises
    ------
    InventoryError
        Missing path, unparseable inventory, no hosts, unsafe host names or bad quiho variables.
    """
    if isinstance(path, Inventory):
        return path
    p = Path(path) if path is not None else local_inventory_path()
    if not p.exists():
        raise InventoryError(f"inventory {p} does not exist")
    env = dict(os.environ, PATH=tool_path(), ANSIBLE_INVENTORY_UNPARSED_FAILED="True", ANSIBLE_NOCOLOR="1",
               ANSIBLE_DEPRECATION_WARNINGS="False", ANSIBLE_LOCALHOST_WARNING="False")
    try:
        proc = subprocess.run(
            ["ansible-inventory", "-i", str(p), "--list"], capture_output=True, text=True, timeout=120, env=env
        )
    except FileNotFoundError as exc:
        raise InventoryError("ansible-inventory not found: pip install ansible-core") from exc
    except subprocess.TimeoutExpired as exc:
        raise InventoryError(f"ansible-inventory took more than 120 s on {p}") from exc
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and "WARNING" not in ln[:12]]
        detail = " ".join(lines[-4:]) if lines else f"rc {proc.returncode}"
        raise InventoryError(f"inventory {p} cannot be parsed: {detail}")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise InventoryError(f"inventory {p}: ansible-inventory printed no JSON ({exc})") from exc
    return _from_listing(str(p), data)


_VARS = {"cpu_quota_pct": "quiho_cpu_quota_pct", "corunner": "quiho_corunner", "thp": "quiho_thp",
         "prefault_mib": "quiho_prefault_mib", "cfs_period_us": "quiho_cfs_period_us", "factors": "quiho_factors",
         "write_iops": "quiho_write_iops", "syscall_rules": "quiho_syscall_rules", "net": "quiho_net",
         "mem_cache_mib": "quiho_mem_cache_mib", "design_rounds": "quiho_design_rounds"}


def _host(name: str, groups: tuple[str, ...], hv: dict[str, Any]) -> tuple[FleetHost | None, list[str]]:
    """One host from its variables, or None and what is wrong with them (named by their inventory variable)."""
    try:
        return FleetHost(
            name=name, groups=groups, connection=str(hv.get("ansible_connection", "ssh")),
            address=str(hv["ansible_host"]) if "ansible_host" in hv else None,
            cpu_quota_pct=hv.get("quiho_cpu_quota_pct", 100), corunner=hv.get("quiho_corunner", "none"),
            thp=hv.get("quiho_thp", "keep"), prefault_mib=hv.get("quiho_prefault_mib", 0),
            cfs_period_us=hv.get("quiho_cfs_period_us", 20000), factors=hv.get("quiho_factors") or {},
            write_iops=str(hv.get("quiho_write_iops", "0")), syscall_rules=hv.get("quiho_syscall_rules", 0),
            net=str(hv.get("quiho_net", "0")), mem_cache_mib=hv.get("quiho_mem_cache_mib", 0),
            design_rounds=hv.get("quiho_design_rounds") or (),
        ), []
    except ValidationError as exc:
        return None, [f"host {name}: {_VARS.get(str(e['loc'][0]), str(e['loc'][0]))}: {e['msg']} "
                      f"(got {e.get('input')!r})" for e in exc.errors()]


def _from_listing(path: str, data: dict[str, Any]) -> Inventory:
    hostvars = (data.get("_meta") or {}).get("hostvars") or {}
    groups: dict[str, list[str]] = {}
    order: list[str] = []

    def walk(group: str, seen: set[str]) -> None:
        if group in seen:
            return
        seen.add(group)
        body = data.get(group) or {}
        for h in body.get("hosts") or []:
            if h not in order:
                order.append(h)
            if group not in ("all", "ungrouped"):
                groups.setdefault(h, []).append(group)
        for child in body.get("children") or []:
            walk(child, seen)

    walk("all", set())
    for h in hostvars:
        if h not in order:
            order.append(h)
    if not order:
        raise InventoryError(f"inventory {path} defines no hosts")
    hosts = []
    problems = []
    for name in order:
        hv = hostvars.get(name) or {}
        if not _HOSTNAME.match(name):
            problems.append(f"host {name!r}: use letters, digits, '.', '_' or '-' (the name becomes a path)")
            continue
        host, why = _host(name, tuple(groups.get(name, [])), hv)
        if host is not None:
            hosts.append(host)
        problems.extend(why)
    if problems:
        raise InventoryError(f"inventory {path}: " + "; ".join(problems))
    for h in hosts:
        if h.emulated and h.connection != "local":
            raise InventoryError(
                f"inventory {path}: host {h.name} sets quiho_cpu_quota_pct/quiho_corunner/quiho_thp/"
                "quiho_prefault_mib or a knob (quiho_write_iops/quiho_syscall_rules/quiho_net/quiho_mem_cache_mib) "
                "but is not ansible_connection: local "
                "(emulated hosts run on the controller, one at a time)"
            )
    return Inventory(path=path, hosts=tuple(hosts))
