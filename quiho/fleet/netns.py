"""A real multi-host fleet on one machine: network namespaces, each with its own sshd (root only).

For tests and benchmarks. Every namespace gets a veth link to the root
namespace (``10.200.<net>.1`` ↔ ``10.200.<net>.2``), its own host key and an
sshd with key-only root login; the generated ``known_hosts`` lists each
host's key, so host-key checking stays on. All namespaces share the
filesystem, which is why quiho's remote paths are per inventory host.
Teardown kills everything inside the namespaces and removes links and
namespaces, also after a failure.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from quiho.errors import QuihoError

__all__ = ["NetnsFleet", "NetnsHost"]

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


@dataclass(frozen=True)
class NetnsHost:
    """One namespace host."""

    name: str
    netns: str
    veth: str
    address: str


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
    """

    def __init__(self, n: int = 3, prefix: str = "qtest") -> None:
        self.n = n
        self.prefix = prefix
        self.token = secrets.token_hex(2)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{prefix}-fleet-"))
        self.hosts: list[NetnsHost] = []
        self.inventory = self.dir / "hosts.yml"
        self.key = self.dir / "id_ed25519"
        self.known_hosts = self.dir / "known_hosts"

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
            conf = self.dir / f"sshd{i}.conf"
            conf.write_text(_SSHD_CONF.format(addr=h.address, hostkey=hostkey, pidfile=self.dir / f"sshd{i}.pid",
                                              authorized=authorized))
            log = str(self.dir / f"sshd{i}.log")
            _run("ip", "netns", "exec", h.netns, "/usr/sbin/sshd", "-f", str(conf), "-E", log)
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
        lines += [f"    {h.name}: {{ansible_host: {h.address}}}" for h in self.hosts]
        self.inventory.write_text("\n".join(lines) + "\n")
        self._wait_ssh()

    def _wait_ssh(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        for h in self.hosts:
            while True:
                p = subprocess.run(
                    ["ssh", "-i", str(self.key), "-o", f"UserKnownHostsFile={self.known_hosts}",
                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                     f"root@{h.address}", "true"],
                    capture_output=True, text=True,
                )
                if p.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise QuihoError(f"sshd in {h.netns} not reachable: {p.stderr.strip()}")
                time.sleep(0.2)

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
        i = self.hosts.index(host) + 1
        _run("ip", "netns", "exec", host.netns, "/usr/sbin/sshd", "-f", str(self.dir / f"sshd{i}.conf"),
             "-E", str(self.dir / f"sshd{i}.log"))
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
        # ssh clients of ours (outside the namespaces) that still point at our key or known_hosts
        from quiho.fleet.runner import reap_processes

        reap_processes(str(self.dir))
        shutil.rmtree(self.dir, ignore_errors=True)
