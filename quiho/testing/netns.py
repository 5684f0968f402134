"""A real multi-host fleet on one machine: network namespaces, each with its own sshd (root only by default).

For tests and benchmarks. Every namespace gets a veth link to the root
namespace (``10.200.<net>.1`` ↔ ``10.200.<net>.2``), its own host key and an
sshd with key-only root login; the generated ``known_hosts`` lists each
host's key, so host-key checking stays on. All namespaces share the
filesystem, which is why quiho's remote paths are per inventory host.
Teardown kills everything inside the namespaces and removes links and
namespaces, also after a failure.

A host can be made to lack things (:class:`HostLimits`): log in as a non-root
account instead of root, not have some commands (``bpftrace``, ``stap`` ...)
and have its own ``/tmp`` like a separate machine. Its sshd then runs in a
private mount namespace where those commands' files are covered by an empty,
non-executable file (``command -v`` finds nothing; the machine keeps them for
the other hosts) and ``/tmp`` is an empty tmpfs. The account is a system
account with a home, no password (key only) and the fleet's key; teardown
removes it, its home and the mounts (they live only in that namespace).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from quiho.errors import QuihoError

__all__ = ["HostLimits", "NetnsFleet", "NetnsHost"]

_SSHD_CONF = """ListenAddress {addr}
HostKey {hostkey}
PidFile {pidfile}
AuthorizedKeysFile {authorized}
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
MaxStartups 50:30:100
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel ERROR
"""


#: Where a host without some commands is searched for them (``sh``'s PATH for root and for other users).
_SEARCH_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/games")


@dataclass(frozen=True)
class HostLimits:
    """What one namespace host lacks (see the module docstring).

    Attributes
    ----------
    nonroot : bool, default False
        Log in as a non-root account (created for the fleet, removed at teardown) instead of root.
    hide : tuple of str, default ()
        Commands the host's sessions cannot find on PATH (e.g. ``("bpftrace", "stap")``); absent ones are
        ignored.
    private_tmp : bool, default False
        The host's ``/tmp`` is its own empty tmpfs, as on a separate machine (a non-root account cannot use
        directories root left in the shared ``/tmp``, such as quiho's remote run directory).
    """

    nonroot: bool = False
    hide: tuple[str, ...] = ()
    private_tmp: bool = False


@dataclass(frozen=True)
class NetnsHost:
    """One namespace host (``user``: the account it is reached as; ``hidden``: the files covered there)."""

    name: str
    netns: str
    veth: str
    address: str
    user: str = "root"
    hidden: tuple[str, ...] = field(default=())


def _run(*argv: str) -> None:
    proc = subprocess.run(list(argv), capture_output=True, text=True)
    if proc.returncode != 0:
        raise QuihoError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")


class NetnsFleet:
    """Context manager: ``n`` namespaces with sshd, an inventory file, and a clean teardown.

    Parameters
    ----------
    n : int
        Number of hosts.
    prefix : str, default "qtest"
        Prefix of namespace names (tests use ``qtest``).
    limits : mapping of int to HostLimits, optional
        Per host number (1 … ``n``): what that host lacks. Hosts not named are full root hosts.
    """

    def __init__(self, n: int = 3, prefix: str = "qtest", *, limits: Mapping[int, HostLimits] | None = None) -> None:
        self.limits = dict(limits or {})
        bad = sorted(i for i in self.limits if not 1 <= i <= n)
        if bad:
            raise QuihoError(f"host limits for hosts {bad} of a {n}-host fleet (hosts are numbered 1 … {n})")
        self.n = n
        self.prefix = prefix
        self.token = secrets.token_hex(2)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{prefix}-fleet-"))
        self.hosts: list[NetnsHost] = []
        self.inventory = self.dir / "hosts.yml"
        self.key = self.dir / "id_ed25519"
        self.known_hosts = self.dir / "known_hosts"
        self._users: list[str] = []  # accounts created for non-root hosts (teardown removes them)

    def _free_net(self, used: set[int]) -> int:
        routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
        for _ in range(200):
            net = 10 + secrets.randbelow(240)
            if net not in used and f"10.200.{net}." not in routes:
                return net
        raise QuihoError("no free 10.200.x.0/24 subnet for the namespace fleet")

    def __enter__(self) -> NetnsFleet:
        try:
            self._setup()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def _setup(self) -> None:
        Path("/run/sshd").mkdir(exist_ok=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key))
        authorized = self.dir / "authorized_keys"
        shutil.copy(self.key.with_suffix(".pub"), authorized)
        authorized.chmod(0o600)
        used: set[int] = set()
        known = []
        for i in range(1, self.n + 1):
            net = self._free_net(used)
            used.add(net)
            h = NetnsHost(
                name=f"{self.prefix}{self.token}h{i}",
                netns=f"{self.prefix}-{self.token}-{i}",
                veth=f"qt{self.token}v{i}",
                address=f"10.200.{net}.2",
            )
            self.hosts.append(h)
            _run("ip", "netns", "add", h.netns)
            _run("ip", "link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns)
            _run("ip", "addr", "add", f"10.200.{net}.1/24", "dev", h.veth)
            _run("ip", "link", "set", h.veth, "up")
            _run("ip", "netns", "exec", h.netns, "ip", "addr", "add", f"{h.address}/24", "dev", "eth0")
            _run("ip", "netns", "exec", h.netns, "ip", "link", "set", "eth0", "up")
            _run("ip", "netns", "exec", h.netns, "ip", "link", "set", "lo", "up")
            hostkey = self.dir / f"hostkey{i}"
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey))
            known.append(f"{h.address} {hostkey.with_suffix('.pub').read_text().split(' ')[0]} "
                         f"{hostkey.with_suffix('.pub').read_text().split(' ')[1]}")
            lim = self.limits.get(i)
            keys, allow = authorized, ""
            if lim is not None:
                user = self._add_user(i) if lim.nonroot else "root"
                if user != "root":  # sshd reads the keys as the user: the fleet's directory is root's only
                    keys, allow = Path("/home") / user / ".ssh" / "authorized_keys", f"AllowUsers {user}\n"
                h = NetnsHost(h.name, h.netns, h.veth, h.address, user, self._hidden_files(lim.hide))
                self.hosts[-1] = h
            (self.dir / f"sshd{i}.conf").write_text(_SSHD_CONF.format(
                addr=h.address, hostkey=hostkey, pidfile=self.dir / f"sshd{i}.pid", authorized=keys) + allow)
            self._start_sshd(h, i)
        self.known_hosts.write_text("\n".join(known) + "\n")
        lines = [
            "all:",
            "  vars:",
            "    ansible_user: root",
            f"    ansible_ssh_private_key_file: {self.key}",
            f"    ansible_ssh_common_args: \"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes\"",
            "    ansible_python_interpreter: /usr/bin/python3",
            "  hosts:",
        ]
        lines += [f"    {h.name}: {{ansible_host: {h.address}"
                  + (f", ansible_user: {h.user}" if h.user != "root" else "") + "}" for h in self.hosts]
        self.inventory.write_text("\n".join(lines) + "\n")
        self._wait_ssh()

    def _wait_ssh(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        for h in self.hosts:
            while True:
                p = subprocess.run(
                    ["ssh", "-i", str(self.key), "-o", f"UserKnownHostsFile={self.known_hosts}",
                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                     f"{h.user}@{h.address}", "true"],
                    capture_output=True, text=True,
                )
                if p.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise QuihoError(f"sshd in {h.netns} not reachable: {p.stderr.strip()}")
                time.sleep(0.2)

    def _add_user(self, i: int) -> str:
        """A system account for host ``i``: home, ``/bin/sh``, no password (key login only), the fleet's key."""
        user = f"{self.prefix}{self.token}u{i}"
        home = Path("/home") / user
        _run("useradd", "--system", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh",
             "--user-group", user)
        self._users.append(user)
        # '*' (no password matches) rather than useradd's '!' (locked): without PAM, sshd refuses locked accounts
        _run("usermod", "--password", "*", user)
        ssh = home / ".ssh"
        ssh.mkdir(mode=0o700)
        shutil.copy(self.key.with_suffix(".pub"), ssh / "authorized_keys")
        (ssh / "authorized_keys").chmod(0o600)
        _run("chown", "-R", f"{user}:{user}", str(ssh))
        return user

    @staticmethod
    def _hidden_files(commands: tuple[str, ...]) -> tuple[str, ...]:
        """The files the commands resolve to on the search path (symlinks followed, each once)."""
        out: list[str] = []
        for c in commands:
            for d in _SEARCH_PATH:
                p = Path(d) / c
                if p.exists():
                    real = str(p.resolve())
                    if real not in out:
                        out.append(real)
        return tuple(out)

    def _start_sshd(self, h: NetnsHost, i: int) -> None:
        """Start host ``i``'s sshd in its namespace; a limited host's in its own mount namespace (see HostLimits)."""
        sshd = ["/usr/sbin/sshd", "-f", str(self.dir / f"sshd{i}.conf"), "-E", str(self.dir / f"sshd{i}.log")]
        lim = self.limits.get(i)
        if lim is None:
            _run("ip", "netns", "exec", h.netns, *sshd)
            return
        empty = self.dir / "empty"
        empty.touch(mode=0o644)
        q = shlex.quote
        lines = ["set -e"] + [f"mount --bind {q(str(empty))} {q(f)}" for f in h.hidden]
        if lim.private_tmp:
            # stage a tmpfs, put this fleet's directory back into it (sshd reads its host key and
            # authorized keys there per connection), then move it over /tmp
            stage = self.dir / f"tmp{i}"
            stage.mkdir(exist_ok=True)
            lines.append(f"mount -t tmpfs -o mode=1777,size=1g {q(h.netns)} {q(str(stage))}")
            tmp = Path("/tmp").resolve()
            if self.dir.resolve().is_relative_to(tmp):
                back = stage / self.dir.resolve().relative_to(tmp)
                lines += [f"mkdir -p {q(str(back))}", f"mount --bind {q(str(self.dir))} {q(str(back))}"]
            lines.append(f"mount --move {q(str(stage))} /tmp")
        lines.append('exec "$@"')
        _run("ip", "netns", "exec", h.netns, "unshare", "--mount", "--propagation", "private", "sh", "-c",
             "\n".join(lines), "sh", *sshd)

    def pids(self, host: NetnsHost) -> list[int]:
        """PIDs of every process inside ``host``'s namespace."""
        out = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True).stdout
        return [int(x) for x in out.split()]

    def kill_all(self, host: NetnsHost) -> int:
        """SIGKILL every process in the namespace (sshd, sessions, stress-ng): the host 'dies'."""
        n = 0
        for pid in self.pids(host):
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except ProcessLookupError:
                pass
        return n

    def link(self, host: NetnsHost, up: bool) -> None:
        """Take the host's link down (a network partition) or up again."""
        _run("ip", "link", "set", host.veth, "up" if up else "down")

    def restart_sshd(self, host: NetnsHost) -> None:
        """Start the host's sshd again after :meth:`kill_all`."""
        self._start_sshd(host, self.hosts.index(host) + 1)
        self._wait_ssh()

    def teardown(self) -> None:
        """Kill everything in the namespaces, delete links and namespaces, remove the directory."""
        for h in self.hosts:
            for _ in range(3):
                if self.kill_all(h) == 0:
                    break
                time.sleep(0.1)
            subprocess.run(["ip", "link", "del", h.veth], capture_output=True)
            subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
        for user in self._users:  # after the namespaces' processes are gone: userdel refuses a logged-in user
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        # ssh clients of ours (outside the namespaces) that still point at our key or known_hosts
        from quiho.fleet.runner import reap_processes

        reap_processes(str(self.dir))
        shutil.rmtree(self.dir, ignore_errors=True)
