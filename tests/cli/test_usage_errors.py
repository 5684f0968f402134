"""Usage errors print typer's usage text and exit 2; Ctrl-C prints "interrupted" and exits 130.

The clean-venv test installs quiho the way a new user does (``pip install``, no system site packages, so no
stray ``click``) and runs the usage-error paths through the installed ``quiho`` script.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

import numpy as np
import pytest

from quiho.cli.main import main
from quiho.testing.procs import has_open

REPO = Path(__file__).resolve().parents[2]

#: (argv, what the usage message must mention)
USAGE_ERRORS = [
    ([], "Usage: quiho"),
    (["nope"], "No such command 'nope'"),
    (["targets", "--bogus"], "No such option: --bogus"),
    (["irup", "x", "--seeds", "abc"], "'--seeds'"),
    (["history"], "Usage: quiho history"),
    (["fleet"], "Usage: quiho fleet"),
    (["irup"], "Missing argument"),
    (["targets", "--store"], "requires an argument"),
    (["models", "x.perf"], "Missing option '--function'"),
]


@pytest.mark.parametrize(("argv", "needle"), USAGE_ERRORS, ids=[" ".join(a) or "no-args" for a, _ in USAGE_ERRORS])
def test_usage_errors_in_process(argv, needle, capsys):
    assert main(argv) == 2
    cap = capsys.readouterr()
    text = cap.err + cap.out
    assert needle in text
    assert "Traceback" not in text


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "Usage: quiho" in capsys.readouterr().out


def test_an_unknown_battery_is_refused_before_the_fleet_is_calibrated(tmp_path, capsys):
    """Calibrating the local fleet takes a minute of probes: a misspelt battery must not cost it."""
    from quiho.store import open_store
    from quiho.store.calibrations import latest_calibration

    store = tmp_path / "s.db"
    assert main(["fingerprint", "--battery", "bogus", "--store", str(store)]) == 1
    assert not store.exists()
    spec = str(REPO / "examples" / "stream" / "stream.yml")
    assert main(["profile", "stream@nadds1", "stream@nadds30", "--spec", spec, "--battery", "bogus",
                 "--store", str(store)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("quiho: error: no battery 'bogus' in ") for line in err)
    with open_store(store) as st:
        assert latest_calibration(st) is None


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


@pytest.mark.slow
def test_usage_errors_in_a_clean_venv(tmp_path):
    """``pip install`` into a venv without system site packages; usage errors → exit 2, no traceback."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "quiho", src / "quiho", ignore=shutil.ignore_patterns("__pycache__"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], capture_output=True, text=True,
                       timeout=1500)
    assert r.returncode == 0, r.stderr[-2000:]
    probe = _run([str(py), "-c", "import sys; print(sys.prefix != sys.base_prefix)"])
    assert probe.stdout.strip() == "True"
    quiho = env_dir / "bin" / "quiho"
    _check_usage_errors(quiho, tmp_path)
    # the oldest typer the dependency range allows runs on the click package (typer < 0.20 did not vendor it;
    # typer 0.12 needs click < 8.2): the same answers
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "typer==0.12.5", "click<8.2"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    probe = _run([str(py), "-c", "import typer, click; print(typer.__version__)"])
    assert probe.stdout.strip() == "0.12.5", probe.stderr
    _check_usage_errors(quiho, tmp_path)


def _check_usage_errors(quiho: Path, cwd: Path) -> None:
    for argv, needle in USAGE_ERRORS:
        r = _run([str(quiho), *argv], cwd=cwd)
        assert r.returncode == 2, (argv, r.stderr[-1500:])
        assert needle in r.stderr + r.stdout or (not argv and "Usage:" in r.stderr), (argv, r.stderr)
        assert "Traceback" not in r.stderr, (argv, r.stderr)
    r = _run([str(quiho), "--help"], cwd=cwd)
    assert r.returncode == 0 and "Usage: quiho" in r.stdout
    r = _run([str(quiho), "fleet", "drift", "--alpha", "nan"], cwd=cwd)
    assert r.returncode == 2 and "--alpha" in r.stderr and "Traceback" not in r.stderr, r.stderr
    # a quiho error is one line with exit 1, too
    r = _run([str(quiho), "detect", str(cwd / "none.perf"), str(cwd / "none.perf")], cwd=cwd)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


# --- Ctrl-C -------------------------------------------------------------------------------------------------------


def _opened(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (it is inside the command, past start-up and imports)."""
    return has_open(pid, path)


def _default_sigint() -> None:
    # A shell's background job (`cmd &` without job control, nohup) starts with SIGINT ignored, and a Python started
    # so keeps ignoring it, as it should: Ctrl-C is then not the user's. The test is about the handler, so the child
    # starts as a terminal's foreground command does, whatever started pytest (a CI run under nohup read rc 0).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_when_open(argv: list[str], watched: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Start ``python -m quiho argv``; send a real SIGINT as soon as it has ``watched`` open."""
    p = subprocess.Popen([sys.executable, "-m", "quiho", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=cwd, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 60
    while not _opened(p.pid, watched):
        assert p.poll() is None, f"quiho ended (rc {p.returncode}) before it opened {watched}: {p.stderr.read()}"
        assert time.monotonic() < deadline, "quiho never opened its input"
        time.sleep(0.002)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


#: Interrupts per test: the failures were races, so one try proves little.
REPEATS = 6


def _assert_interrupted(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode == 130, (r.returncode, r.stderr[-1500:])
    assert r.stderr.strip().splitlines()[-1] == "quiho: interrupted", r.stderr[-1500:]
    assert "Traceback" not in r.stderr


def test_ctrl_c_during_history_detect(tmp_path):
    n = 2_000_000  # large enough that reading it takes far longer than the watcher's 2 ms poll
    big = tmp_path / "big.csv"
    rng = np.random.default_rng(0)
    vals = 1.0 + rng.normal(0, 0.01, n) + (np.arange(n) > n // 2)
    with big.open("w") as f:
        f.write("revision,value\n")
        f.writelines(f"r{i},{v:.5f}\n" for i, v in enumerate(vals))
    for _ in range(REPEATS):  # an interrupt once came out as "not a readable CSV file", exit 1
        _assert_interrupted(_interrupt_when_open(["history", "detect", str(big)], big, tmp_path))


def test_ctrl_c_during_import_quiho_popper(tmp_path):
    n = 600_000
    big = tmp_path / "results.csv"
    with big.open("w") as f:
        f.write("timestamp,benchmark,machine,repetition,test,result\n")
        f.writelines(f"{1512873230 + i // 50},stressng,m{i % 7},{1 + i % 3},s{i % 50},{1000 + i % 97}.5\n"
                     for i in range(n))
    store = tmp_path / "q.db"
    for _ in range(REPEATS):  # an interrupt once killed pandas' reader threads: SIGSEGV about 1 time in 15
        r = _interrupt_when_open(["import", "quiho-popper", str(big), "--store", str(store)], big, tmp_path)
        _assert_interrupted(r)
