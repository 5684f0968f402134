"""Property-based test of the whole command line: whatever the input, one answer with a known exit code.

Every command of the typer app (enumerated, so a new command is covered without editing this file) gets
generated bad files (random bytes, truncated valid files, JSON/YAML of the wrong shape, CSV edge cases), odd names
(control characters, mathtext, ``/``, non-ASCII, very long) and odd option values (nan, inf, negative, huge,
non-numeric). Each run must end with an exit code in {0, 1, 2, 3}, print no traceback and, when it fails, leave
the store byte for byte as it was. Commands run in-process through :func:`quiho.cli.main.main` with stdout and
stderr captured as strict UTF-8 byte streams (as a terminal or pipe would take them); a few run as real
processes with real ``argv`` bytes.

Fleet-measuring commands (``fingerprint``, ``run``, ``profile``, ``schedule run``, ``trace``) are only ever given
an inventory/spec that cannot load and a store below a regular file, so they stop in validation; ``schedule
install/remove`` always get a sandbox ``--root``; ``history sample/bisect`` a directory that is not a git
repository.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import typing
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.main import get_command

from quiho.cli.main import app, main

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
EXAMPLES = int(os.environ.get("QUIHO_PROPERTY_EXAMPLES", "14"))  # per command (~25 commands); raise it to dig

# --- the commands -------------------------------------------------------------------------------------------------


def _leaves(cmd, path=()):  # noqa: ANN001, ANN202
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in sorted(subs.items()):
            yield from _leaves(sub, (*path, name))
    else:
        yield path, cmd


def _base_type(ann: object) -> object:
    """``Annotated[int | None, ...]`` → ``int``; ``list[str]`` → ``str``."""
    if typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    if typing.get_origin(ann) in (list, typing.Union) or (args and type(ann).__name__ == "UnionType"):
        return _base_type(args[0]) if args else ann
    return ann


def _params(cmd) -> list[dict]:  # noqa: ANN001
    hints = typing.get_type_hints(cmd.callback, include_extras=True)
    out = []
    for p in cmd.params:
        out.append({"name": p.name, "opt": (p.opts[0] if p.param_type_name == "option" else None),
                    "required": bool(p.required), "flag": bool(getattr(p, "is_flag", False)),
                    "type": _base_type(hints.get(p.name, str)), "nargs": p.nargs})
    return out


COMMANDS = {" ".join(path): _params(cmd) for path, cmd in _leaves(get_command(app))}
#: Commands that measure the fleet or run programs: validation paths only (see the module docstring).
MEASURING = {"fingerprint", "run", "profile", "schedule run", "trace", "fleet calibrate"}
#: Options only the guards set.
GUARDED = {"--store", "-i", "--inventory", "--root", "--spec", "--repo", "--project"}


def test_every_command_is_enumerated():
    assert {"irup", "detect", "history detect", "history plot", "import quiho-popper", "fleet drift",
            "store compact", "profile", "schedule install"} <= set(COMMANDS)
    assert len(COMMANDS) >= 20


# --- generated inputs ---------------------------------------------------------------------------------------------

MATH = ["$x^$", "$\\foo$", "a$b", "$$"]
CONTROL = ["a\nb", "\x1b[31mred\x1b[0m", "x\ry", "tab\there", "\x7f", "\u202eevil", "bell\x07"]
names = st.one_of(
    st.sampled_from(MATH + CONTROL + ["a/b", "../../etc/passwd", "ünïcødé ✓", "名前", " ", "-", "--x", "@", "a@",
                                      "@b", "a@b/c", "x" * 5000, "null", "NaN", "0", "-1"]),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1, max_size=40),
)
numbers = st.one_of(
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "-1", "0", "-0", "1e308", "-1e308", "1e-320",
                     "99999999999999999999999", "-99999999999999999999", "abc", "", "0x10", "1_000", "1e3",
                     "2147483648", "4294967296", " 3", "3 "]),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)

_CSV_CASES = [
    b"", b"revision,value\n", b"\xef\xbb\xbfrevision,value\r\na,1\r\nb,2\r\nc,3\r\n", b"revision;value\na;1\nb;2\n",
    b"revision,value\na,1\x00\nb,2\n", b"revision,value\na,nan\nb,inf\nc,-inf\n",
    b"revision,value\na,1e308\nb,-1e308\n", b"revision,value,value\na,1,2\nb,3,4\n",
    b"revision,value\n\"a\nb\",1\nc,2\n", b"revision,value\n$x^$,1\n$\\foo$,2\n",
    b"revision,value\na,1_000\nb,2\n", b"revision,value,order\na,1,1e20\nb,2,3\n", b"revision,value\na,caf\xe9\n",
    b"timestamp,benchmark,machine,repetition,test,result\n1,stressng,m,1,cpu,inf\n",
    b"timestamp,benchmark,machine,repetition,test,result\n1e30,stressng,m,1.5,cpu,1\n1,app,m,1,t,1\n",
    b"timestamp,benchmark,machine,repetition,test,result\n1,stressng,m\x1b[31m,1,$x^$,5\n1,a/b,m,1,\n,3\n",
    b"a,b\n" + b"1,2\n" * 50,
    b"," * 20000 + b"\n",
]
_VALID = {
    "csv": b"revision,value\n" + b"".join(f"r{i},{100 + (i > 10) * 10 + i % 3}\n".encode() for i in range(25)),
    "perf": json.dumps({"header": {"units": {"t": "us"}},
                        "resources": {"f#0": {"amount": [float(i) for i in range(30)],
                                              "structure-unit-size": list(range(30))}},
                        "resource_type_map": {"f#0": {"uid": "f"}}}).encode(),
    "yaml": yaml.safe_dump({"all": {"hosts": {"h1": {"ansible_host": "127.0.0.1"}}}}).encode(),
    "spec": yaml.safe_dump({"name": "app", "versions": {"v1": {"run": "true"}}, "metric": {"unit": "s"}}).encode(),
}
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(
        ["resources", "resource_type_map", "header", "amount", "hosts", "all", "name", "versions", "units", "x"]
        + MATH), kids, max_size=4),
    max_leaves=12,
)


@st.composite
def bad_files(draw) -> bytes:  # noqa: ANN001
    kind = draw(st.sampled_from(["bytes", "truncated", "json", "yaml", "csv", "valid"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "truncated":
        v = _VALID[draw(st.sampled_from(sorted(_VALID)))]
        return v[: draw(st.integers(0, len(v) - 1))]
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    if kind == "yaml":
        return yaml.safe_dump(draw(json_values)).encode()
    if kind == "csv":
        return draw(st.sampled_from(_CSV_CASES))
    return _VALID[draw(st.sampled_from(sorted(_VALID)))]


# --- the sandbox ---------------------------------------------------------------------------------------------------


def _popper_csv(path: Path) -> None:
    rng = np.random.default_rng(3)
    rows = ["timestamp,benchmark,machine,repetition,test,result"]
    for m, host in enumerate(["h0", "h1\x1b[31m", "h$x^$"]):
        for rep in (1, 2):
            for s in ("cpu", "stream", "$\\foo$"):
                v = 1000 + m * 100 + rng.random()
                rows.append(f"100,stressng,{json.dumps(host)},{rep},{json.dumps(s)},{v:.3f}")
            rows.append(f"100,{json.dumps('a/b')},{json.dumps(host)},{rep},{json.dumps('$x^$')},{5 + m:.3f}")
            rows.append(f"100,app,{json.dumps(host)},{rep},t,{5 + m:.3f}")
    path.write_text("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A store with a bit of everything: application runs, histories with odd names, fleet fingerprints, traces."""
    from quiho.datasets.fleet import fingerprint_history, store_fingerprint_history
    from quiho.store import open_store

    d = tmp_path_factory.mktemp("template")
    db = d / "q.db"
    popper = d / "results.csv"
    _popper_csv(popper)
    assert main(["import", "quiho-popper", str(popper), "--store", str(db)]) == 0
    hist = d / "hist.csv"
    hist.write_text("revision,value,cfg\n" + "".join(
        f'r{i},{100 + (i > 12) * 20 + i % 3},"{c}"\n' for i in range(25)
        for c in ("a\nb", "$x^$", "e\x1b[31m")))  # quoted: a name with a newline, not a broken row
    assert main(["history", "import", str(hist), "--config-col", "cfg", "--store", str(db)]) == 0
    with open_store(db) as s:
        store_fingerprint_history(s, fingerprint_history(n_hosts=3, n_runs=4, stressors=("cpu", "stream")))
    return db


def _digest(db: Path) -> dict[str, str]:
    out = {}
    for suffix in ("", "-wal"):
        p = Path(f"{db}{suffix}")
        if p.exists():
            out[suffix] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


class _Sandbox:
    """A fresh directory with a copy of the template store, the generated files and guard files."""

    def __init__(self, template: Path) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="h5prop-"))
        self.store = self.dir / "q.db"
        shutil.copy2(template, self.store)
        self.afile = self.dir / "afile"
        self.afile.write_text("a regular file\n")
        self.bad_inventory = self.dir / "inventory.yml"
        self.bad_inventory.write_text("- not\n- an inventory\n")
        self.notgit = self.dir / "notgit"
        self.notgit.mkdir()
        self.n = 0

    def file(self, content: bytes, suffix: str) -> str:
        self.n += 1
        p = self.dir / f"in{self.n}{suffix}"
        p.write_bytes(content)
        return str(p)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


@st.composite
def invocations(draw, command: str):  # noqa: ANN001, ANN201
    """``(argv builder, guard)``: the argv is built against a sandbox at run time (file contents drawn now)."""
    params = COMMANDS[command]
    files = []

    def value_for(p: dict) -> tuple[str, object]:
        t = p["type"]
        if t in (int, float):
            return "lit", draw(numbers)
        if t is Path:
            choice = draw(st.sampled_from(["file", "file", "missing", "afile-child", "name"]))
            if choice == "file":
                suffix = draw(st.sampled_from([".csv", ".perf", ".json", ".yml", ".png", ".svg", ".txt", ""]))
                files.append((draw(bad_files()), suffix))
                return "file", len(files) - 1
            return choice, draw(names)
        if draw(st.booleans()):
            suffix = draw(st.sampled_from([".csv", ".perf", ".json"]))
            files.append((draw(bad_files()), suffix))
            return "file", len(files) - 1
        return "lit", draw(names)

    plan = []
    for p in params:
        if p["opt"] is None:  # positional
            n = 1 if p["nargs"] == 1 else draw(st.integers(1, 2))
            plan.append((None, [value_for(p) for _ in range(n)]))
        elif p["flag"]:
            if draw(st.booleans()):
                plan.append((p["opt"], None))
        elif p["required"] or draw(st.integers(0, 3)) == 0:
            plan.append((p["opt"], [value_for(p)]))
    use_store = draw(st.sampled_from(["template", "template", "default", "missing"]))
    return plan, files, use_store


def _argv(command: str, plan, files, use_store: str, box: _Sandbox) -> list[str]:  # noqa: ANN001
    paths = [box.file(content, suffix) for content, suffix in files]

    def render(kind: str, v: object) -> str:
        if kind == "file":
            return paths[typing.cast(int, v)]
        if kind == "missing":
            return str(box.dir / "missing" / f"{v}"[:100].replace("/", "_"))
        if kind == "afile-child":
            return str(box.afile / "x.png")
        return typing.cast(str, v)

    argv = command.split()
    for opt, vals in plan:
        if opt in GUARDED:
            continue  # the guards below decide these
        if opt is None:
            if command == "trace" and vals is not None and len(argv) > 1:
                continue  # the traced command is fixed below
            argv += [render(k, v) for k, v in vals]
        elif vals is None:
            argv.append(opt)
        else:
            argv += [opt, *(render(k, v) for k, v in vals)]
    # guards: nothing measures, installs outside the sandbox or runs a build
    if command in MEASURING:
        argv += ["--store", str(box.afile / "q.db")]
        if command in ("fingerprint", "run", "profile", "schedule run"):
            argv += ["-i", str(box.bad_inventory)]
        if command == "profile":
            argv += ["--spec", str(box.bad_inventory), "--project", str(box.bad_inventory)]
        if command == "trace":
            argv += ["--", "/nonexistent-h5/cmd"]
    elif command.startswith("schedule"):
        argv += ["--root", str(box.dir / "root")]
        if command == "schedule install":
            argv += ["-i", str(box.bad_inventory)]
        if "--store" in {p["opt"] for p in COMMANDS[command]}:
            argv += ["--store", str(box.store)]
    else:
        if command in ("history sample", "history bisect"):
            argv += ["--repo", str(box.notgit)]
        if "--store" in {p["opt"] for p in COMMANDS[command]}:
            if use_store == "template":
                argv += ["--store", str(box.store)]
            elif use_store == "missing":
                argv += ["--store", str(box.dir / "nope" / "q.db")]
    return argv


def run_in_process(argv: list[str], cwd: Path, env_store: Path) -> tuple[int | None, str, str, str]:
    """``(exit code or None if it raised, stdout, stderr, traceback of an escaped exception)``."""
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="strict", write_through=True)
    old_cwd, old_env = os.getcwd(), os.environ.get("QUIHO_STORE")
    os.chdir(cwd)
    os.environ["QUIHO_STORE"] = str(env_store)
    tb = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc: int | None = main(argv)
    except BaseException:  # noqa: BLE001 - anything escaping main() is the failure being looked for
        rc, tb = None, traceback.format_exc()
    finally:
        os.chdir(old_cwd)
        if old_env is None:
            os.environ.pop("QUIHO_STORE", None)
        else:
            os.environ["QUIHO_STORE"] = old_env
        import matplotlib.pyplot as plt

        plt.close("all")
    return rc, out_b.getvalue().decode("utf-8", "replace"), err_b.getvalue().decode("utf-8", "replace"), tb


#: What a name must never bring to a terminal raw (``quiho._text.printable`` escapes them); newline and tab are
#: the output's own line and column separators.
_UNSAFE_CHARS = {chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0)]} | set(
    "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def check_run(command: str, plan, files, use_store: str, template: Path) -> None:  # noqa: ANN001
    box = _Sandbox(template)
    try:
        argv = _argv(command, plan, files, use_store, box)
        before = _digest(box.store)
        rc, out, err, tb = run_in_process(argv, box.dir, box.store)
        shown = [a[:80] for a in argv]
        assert tb == "", f"exception escaped main() for {shown}:\n{tb[-3000:]}"
        assert rc in (0, 1, 2, 3), f"exit {rc} for {shown}\n{err[-2000:]}"
        assert "Traceback (most recent call last)" not in err + out, f"{shown}\n{err[-3000:]}"
        raw = sorted({c for c in out + err if c in _UNSAFE_CHARS})
        assert not raw, f"control characters {raw} printed raw by {shown}:\n{(out + err)[-1500:]!r}"
        if rc != 0:
            assert _digest(box.store) == before, f"store changed by a failing command: {shown}\n{err[-1000:]}"
            assert err.strip(), f"exit {rc} without a word on stderr: {shown}"
    finally:
        box.close()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_command_survives_generated_input(command, template):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=IN_CI, database=None,
              suppress_health_check=list(HealthCheck))
    @given(inv=invocations(command))
    def prop(inv) -> None:  # noqa: ANN001
        plan, files, use_store = inv
        check_run(command, plan, files, use_store, template)

    prop()


# --- a few real processes with real argv bytes ----------------------------------------------------------------------

REAL = [
    ["history", "detect", b"\xff\xfe-not-utf8.csv"],
    ["history", "plot", "{csv}", "-o", b"\xff.png", "--unit", b"\xff\x1b[31m"],
    ["detect", "{perf}", b"\xff\xfe"],
    ["irup", b"\xffname\n", "--store", "{store}"],
    ["import", "quiho-popper", "{csv}", "--store", "{afile}/q.db"],
    ["fleet", "drift", "--store", "{store}", "--max-age", "1e300"],
    ["store", "compact", "--store", "{store}", "--older-than", "nan"],
]


@pytest.mark.parametrize("argv", REAL, ids=[" ".join(a if isinstance(a, str) else "<bytes>" for a in r[:2])
                                           for r in REAL])
def test_real_process_with_undecodable_argv(argv, template, tmp_path):
    store = tmp_path / "q.db"
    shutil.copy2(template, store)
    (tmp_path / "afile").write_text("x")
    csv = tmp_path / "h.csv"
    csv.write_bytes(_VALID["csv"])
    perf = tmp_path / "p.perf"
    perf.write_bytes(_VALID["perf"])
    subst = {"{store}": str(store), "{csv}": str(csv), "{perf}": str(perf), "{afile}": str(tmp_path / "afile")}
    args: list[bytes | str] = []
    for a in argv:
        if isinstance(a, str):
            for k, v in subst.items():
                a = a.replace(k, v)
        args.append(a)
    before = _digest(store)
    env = {**os.environ, "QUIHO_STORE": str(store), "PYTHONIOENCODING": "utf-8:strict"}
    r = subprocess.run([sys.executable, "-m", "quiho", *args], capture_output=True, cwd=tmp_path, env=env,
                       timeout=300)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode in (0, 1, 2, 3), err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    if r.returncode:
        assert _digest(store) == before
