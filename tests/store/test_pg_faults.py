"""A PostgreSQL store under faults and contention (a real server, fixture ``pg_server``).

* The server restarted in the middle of an import: the command fails in one line (exit 1) and a rerun completes
  with nothing duplicated.
* The importing process killed with SIGKILL inside its transaction: the store is as before, a rerun completes.
* Four processes of two "controllers" (their own files directories) write at once for ten rounds: history imports
  into new and shared series, fleet fingerprints of shared hosts, profile rows of one batch; nothing is lost or
  duplicated.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quiho.store import fingerprints, history, open_store, profiles

pytestmark = pytest.mark.postgres

PASSWORD = "pw-Quiho-7s3cr3t"  # tests/conftest.py's PG_PASSWORD
N_POINTS = 60_000


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("faults") / "big.csv"
    p.write_text("revision,value\n" + "".join(f"r{i:06d},{1 + (i % 97) / 100}\n" for i in range(N_POINTS)))
    return p


def _start_import(url: str, csv: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "quiho", "history", "import", str(csv), "--series", "big",
                             "--store", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_insert(server, db: str, proc: subprocess.Popen[str]) -> None:  # noqa: ANN001
    """Block until the import's connection is inside its writing transaction (inserting the points)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rows = server.admin("SELECT query FROM pg_stat_activity WHERE application_name = 'quiho' "
                            f"AND datname = '{db}' AND xact_start IS NOT NULL "
                            "AND query ~* '^(COPY|INSERT INTO) history_points'")
        if rows:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    raise AssertionError("the import never reached its inserts")


def _counts(url: str) -> tuple[int, int, int]:
    with open_store(url) as st:
        return tuple(int(st.conn.execute(f"SELECT COUNT(*) FROM {t}").scalar())  # type: ignore[return-value]
                     for t in ("history_series", "history_revisions", "history_points"))


def _rerun_completes(url: str, csv: Path) -> None:
    p = _start_import(url, csv)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert _counts(url) == (1, N_POINTS, N_POINTS)


def test_server_restarted_mid_import_fails_in_one_line_and_a_rerun_completes(pg_server, big_csv: Path) -> None:  # noqa: ANN001
    db = pg_server.new_database()
    url = pg_server.url(db)
    open_store(url).close()
    proc = _start_import(url, big_csv)
    _wait_for_insert(pg_server, db, proc)
    pg_server.stop("fast")
    pg_server.start()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and out == "" and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and PASSWORD not in err
    assert "the server stopped" in err or "lost the connection" in err
    assert _counts(url) == (0, 0, 0)  # the transaction died with the server
    _rerun_completes(url, big_csv)


def test_kill_9_inside_the_transaction_leaves_the_store_consistent(pg_server, big_csv: Path) -> None:  # noqa: ANN001
    db = pg_server.new_database()
    url = pg_server.url(db)
    _rerun_completes(url, big_csv)  # a first complete import: the killed one replaces it
    proc = _start_import(url, big_csv)
    _wait_for_insert(pg_server, db, proc)
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 30  # the server notices the dead client and rolls its transaction back
    while pg_server.admin(f"SELECT 1 FROM pg_stat_activity WHERE datname = '{db}' AND application_name = 'quiho'"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert _counts(url) == (1, N_POINTS, N_POINTS)  # the replaced series is whole, not half-deleted
    _rerun_completes(url, big_csv)


# --- concurrency ---------------------------------------------------------------------------------------------------

ROUNDS = 10
HOSTS = ("h1", "h2", "h3")
STRESSORS = ("cpu", "stream")


def _worker(url: str, files: str, worker: int, start: multiprocessing.synchronize.Event) -> None:
    """One process of one controller: every round a new series, the shared series, a fingerprint, a profile row."""
    os.environ["QUIHO_STORE_FILES"] = files
    start.wait()
    for r in range(ROUNDS):
        with open_store(url) as st:
            revs = [f"r{i}" for i in range(50)]
            history.replace_series(st, f"w{worker}-r{r}", "s", "test", {},
                                   [history.StoredRevision(rev, i, "ok", None, (float(i), float(i) + 0.5))
                                    for i, rev in enumerate(revs)])
            sid = history.ensure_series(st, "shared", "test")
            history.append_revision(st, sid, f"w{worker}-r{r}")
            rid = fingerprints.create_fingerprint_run(st, f"fp-w{worker}-r{r}", "quick", {}, "test")
            for h in HOSTS:
                rows = [(1, s, 100.0 + worker, "ok", None, {}) for s in STRESSORS]
                fingerprints.upsert_measurements(st, rid, h, rows, facts={"worker": worker}, status="ok", reason=None)
            fingerprints.set_run_status(st, rid, "complete")
            profiles.save_profile_row(st, profiles.ProfileRow(
                f"profile-r{r}", "app", "v1", "v2", "complete", "no-change", "", [], rid, {"w": worker}, 1, "t"))


def test_four_processes_of_two_controllers_write_at_once(pg_server, tmp_path: Path) -> None:  # noqa: ANN001
    url = pg_server.url(pg_server.new_database())
    open_store(url).close()
    ctx = multiprocessing.get_context("fork")  # no connection is open in the parent
    start = ctx.Event()
    procs = [ctx.Process(target=_worker, args=(url, str(tmp_path / f"controller{w % 2}"), w, start))
             for w in range(4)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0
    with open_store(url) as st:
        q = st.conn.execute
        assert q("SELECT COUNT(*) FROM history_series").scalar() == 4 * ROUNDS + 1
        assert q("SELECT COUNT(*) FROM history_points").scalar() == 4 * ROUNDS * 100
        shared = history.revisions(st, history.series_id(st, "shared"))
        assert sorted(r.order for r in shared) == list(range(4 * ROUNDS))  # no order given twice, none lost
        assert {r.revision for r in shared} == {f"w{w}-r{r}" for w in range(4) for r in range(ROUNDS)}
        assert q("SELECT COUNT(*) FROM hosts").scalar() == len(HOSTS)
        assert q("SELECT COUNT(*) FROM fingerprint_runs WHERE status = 'complete'").scalar() == 4 * ROUNDS
        assert q("SELECT COUNT(*) FROM measurements").scalar() == 4 * ROUNDS * len(HOSTS) * len(STRESSORS)
        assert q("SELECT COUNT(*) FROM fleet_host_status").scalar() == 4 * ROUNDS * len(HOSTS)
        assert q("SELECT COUNT(*) FROM profiles").scalar() == ROUNDS
