"""Shared fixtures and the rule for tests that need privileges or tools.

A test marked ``root``, ``netns``, ``bpftrace``, ``stressng``, ``chromium`` or ``postgres``
skips with the missing requirement named when the machine lacks it. In CI
(``CI=true``) such a skip is an error instead: CI runs as root with every
tool installed by ``.ci/run``, so a skip there would hide a missing test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
POPPER_RESULTS = SHARED_DATA / "quiho-popper" / "pipelines" / "single-node" / "datapackage" / "quiho" / "results.csv"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _is_root() -> bool:
    return os.geteuid() == 0


def _has_netns() -> bool:
    if not _is_root() or shutil.which("ip") is None or not os.path.exists("/usr/sbin/sshd"):
        return False
    return subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


def _has_bpftrace() -> bool:
    return _is_root() and shutil.which("bpftrace") is not None


_REQUIREMENTS = {
    "root": (_is_root, "needs root (run as root, as CI does)"),
    "netns": (_has_netns, "needs root, iproute2 'ip netns' and /usr/sbin/sshd (apt-get install openssh-server)"),
    "bpftrace": (_has_bpftrace, "needs root and bpftrace (apt-get install bpftrace)"),
    "stressng": (lambda: shutil.which("stress-ng") is not None, "needs stress-ng (apt-get install stress-ng)"),
    "chromium": (lambda: shutil.which("chromium") is not None, "needs chromium (apt-get install chromium)"),
    "postgres": (lambda: _pg_bindir() is not None and (not _is_root() or _has_user("postgres")),
                 "needs Debian's postgresql (apt-get install postgresql: initdb and pg_ctl under /usr/lib/postgresql)"),
}


def _pg_bindir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parts[-3])
    return found[-1].parent if found else None


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
_cache: dict[str, bool] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers():
        req = _REQUIREMENTS.get(mark.name)
        if req is None:
            continue
        check, why = req
        if mark.name not in _cache:
            _cache[mark.name] = bool(check())
        if not _cache[mark.name]:
            if IN_CI:
                pytest.fail(f"CI must run this test but the machine lacks it: {why}")
            pytest.skip(why)


def _shared_data(relpath: str) -> Path:
    """``../shared/data/<relpath>``; skips the calling test with the reason when it is absent (fails in CI).

    Every test that reads the workspace's shared data gets its path from here (fixture ``shared_data``), so a
    checkout without ``../shared`` runs the rest of the suite and names what it skipped.
    """
    p = SHARED_DATA / relpath
    if not p.exists():
        msg = f"needs ../shared/data/{relpath} (the workspace's shared data beside the repo)"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return p


@pytest.fixture(scope="session")
def shared_data():  # noqa: ANN201
    """``shared_data(relpath)`` → path under ``../shared/data``, or the test skips saying what it needs."""
    return _shared_data


@pytest.fixture(scope="session")
def popper_csv() -> Path:
    return _shared_data(str(POPPER_RESULTS.relative_to(SHARED_DATA)))


def _synthetic_calls(n: int, scale: float, seed: int, functions: tuple[str, str] = ("steady", "slower")):  # noqa: ANN202
    """A calls table of two functions, ``n`` calls each; the second one's durations are multiplied by ``scale``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    for f, base in zip(functions, (1000.0, 5000.0), strict=True):
        y = base * (scale if f == functions[1] else 1.0) + rng.normal(0, 20, n)
        rows.append(pd.DataFrame({"function": f, "tid": 1, "order": np.arange(n), "start_ns": np.arange(n) * 10_000,
                                  "inclusive_ns": y.astype(np.int64), "exclusive_ns": y.astype(np.int64),
                                  "depth": 0, "arg": 0}))
    df = pd.concat(rows, ignore_index=True)
    df["function"] = df["function"].astype("category")
    return df


@pytest.fixture(scope="session")
def synthetic_calls():  # noqa: ANN201
    """``make(n, scale, seed, functions=("steady", "slower"))`` → a calls table (see :func:`_synthetic_calls`)."""
    return _synthetic_calls


#: An application name carrying HTML: every report and summary must show it as text.
HTML_NAME = "<img src=x onerror=alert(1)>&app"
#: Trees of the planted-data models (the paper's 1000 are not needed to test plumbing).
FAST_TREES = 100


@pytest.fixture(scope="session")
def planted_result():  # noqa: ANN201
    """Profile of a planted pair (tests/profile, tests/report): baseline leans on stream (memory), candidate on cpu,
    1.5x the level; names carry HTML; one failed run makes it partial."""
    from quiho.datasets import planted_profile
    from quiho.irup import ModelParams
    from quiho.profile import AnalysisOptions, ProfileData, analyse_data, host_fingerprints

    stressors = ("cpu", "matrix", "stream", "zero", "vm", "cache")
    runs, a, b = planted_profile(n_groups=10, spread=0.5, change=1.5, stressors=stressors, application=HTML_NAME,
                                 version_a="v1", version_b="v2<script>")
    runs.loc[(runs["host"] == "g0-h0") & (runs["version"] == "v2<script>"), ["status", "value", "reason"]] = (
        "failed", None, "exit code 3: <b>boom</b>")
    data = ProfileData(runs, a, b, application=HTML_NAME, version_a="v1", version_b="v2<script>", unit="s",
                       fingerprints=host_fingerprints(a))
    return analyse_data(data, AnalysisOptions(seeds=3, model_params=ModelParams(n_estimators=FAST_TREES), n_jobs=2))


# --- a real PostgreSQL server ------------------------------------------------------------------------------------

PG_PASSWORD = "pw-Quiho-7s3cr3t"  # the quiho role's; tests check it never shows in any output
PG_SUPER_PASSWORD = "pw-Super-9x"


class PgServer:
    """A throw-away PostgreSQL cluster in a temporary directory, run as an unprivileged user on a free loopback port.

    Root runs initdb/pg_ctl as the ``postgres`` system user the Debian package creates (PostgreSQL refuses root);
    anyone else as themselves. Password (SCRAM) authentication over TCP, so a wrong password is really refused.
    """

    def __init__(self, root: Path) -> None:
        import socket

        self.root, self.bindir = root, _pg_bindir()
        self.data, self.log = root / "data", root / "server.log"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._n = 0

    def _run(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if _is_root() else []
        subprocess.run([*prefix, *cmd], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        (self.root / "pw").write_text(PG_SUPER_PASSWORD + "\n")
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--pwfile", str(self.root / "pw"), "--auth-host=scram-sha-256", "--auth-local=trust",
                  "-E", "UTF8", "--locale=C.UTF-8")
        self.start()
        self.admin(f"CREATE ROLE quiho LOGIN PASSWORD '{PG_PASSWORD}'")
        self.admin("CREATE ROLE reader LOGIN PASSWORD 'reader-pw'")

    def start(self) -> None:
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off -c max_connections=60"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def admin(self, sql: str, db: str = "postgres") -> list[tuple]:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", password=PG_SUPER_PASSWORD,
                             dbname=db, autocommit=True) as c:
            cur = c.execute(sql)
            return cur.fetchall() if cur.description else []

    def new_database(self) -> str:
        """A fresh empty database owned by the quiho role."""
        self._n += 1
        name = f"t{os.getpid()}_{self._n}"
        self.admin(f"CREATE DATABASE {name} OWNER quiho")
        return name

    def url(self, db: str, user: str = "quiho", password: str | None = PG_PASSWORD) -> str:
        auth = user if password is None else f"{user}:{password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{db}"


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """The session's PostgreSQL server (tests using it are marked ``postgres``); removed at the end."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="quiho-pg-"))
    if _is_root():
        shutil.chown(root, "postgres", "postgres")
    server = PgServer(root)
    try:
        server.init()
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            subprocess.run(["runuser", "-u", "postgres", "--"] * _is_root() + [
                str(server.bindir / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "-w", "stop"],
                capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``--store`` of an empty store on each backend: a SQLite file, or a fresh PostgreSQL database.

    For PostgreSQL ``QUIHO_STORE_FILES`` points into ``tmp_path`` (the Parquet files beside that store).
    """
    if request.param == "sqlite":
        return str(tmp_path / "q.db")
    server = request.getfixturevalue("pg_server")
    monkeypatch.setenv("QUIHO_STORE_FILES", str(tmp_path / "pgfiles"))
    return server.url(server.new_database())
