"""Functions of shared libraries and stripped binaries: the dynamic symbol table, and a real bpftrace trace of
the system zlib's ``deflate`` while Python compresses (software this project did not write)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from quiho.cli.main import main
from quiho.errors import UsageError
from quiho.store import open_store
from quiho.trace import bpftrace_script, list_functions, load_version_calls, resolve_functions
from quiho.trace._collect import normalise_symbol


def _libz() -> Path:
    """The libz the running Python's zlib module uses (Debian: /lib/x86_64-linux-gnu/libz.so.1)."""
    import zlib

    where = [Path(getattr(zlib, "__file__", sys.executable))]
    for obj in where:
        out = subprocess.run(["ldd", str(obj)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.strip().startswith("libz.so") and "=>" in line:
                return Path(line.split("=>")[1].split()[0]).resolve()
    pytest.skip("this Python's zlib is not linked against a shared libz (needs Debian's zlib1g)")


def test_stripped_library_functions_come_from_the_dynamic_table():
    lib = _libz()
    static = subprocess.run(["nm", "--defined-only", str(lib)], capture_output=True, text=True)
    assert "deflate" not in static.stdout.split()  # stripped: the static table alone does not list it
    fns = list_functions(lib)
    assert {"deflate", "inflate", "compress2", "deflateEnd"} <= set(fns)
    assert not [f for f in fns if "@" in f]  # version suffixes removed
    assert resolve_functions(lib, ["deflate"], None) == ["deflate"]
    assert resolve_functions(lib, ["deflate@@ZLIB_1.2.0"], None) == ["deflate"]  # as nm -D prints it
    assert resolve_functions(lib, None, "^deflate(Init2_)?$") == ["deflate", "deflateInit2_"]


def test_normalise_symbol():
    assert normalise_symbol("deflate@@ZLIB_1.2.0") == "deflate"
    assert normalise_symbol("realpath@GLIBC_2.2.5") == "realpath"
    assert normalise_symbol("main") == "main"


def test_an_unstripped_executable_keeps_its_local_functions(tmp_path):
    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed (apt-get install gcc)")
    src = tmp_path / "p.c"
    src.write_text("static int helper(int x) { return x * 3; }\nint visible(int x) { return helper(x) + 1; }\n"
                   "int main(int c, char **v) { (void)v; return visible(c) == 4 ? 0 : 1; }\n")
    exe = tmp_path / "p"
    subprocess.run(["gcc", "-O0", "-o", str(exe), str(src)], check=True)
    assert {"helper", "visible", "main"} <= set(list_functions(exe))  # static table: local 't' symbols too
    stripped = tmp_path / "p-stripped"
    subprocess.run(["strip", "-o", str(stripped), str(exe)], check=True)
    with pytest.raises(UsageError, match="no function symbols"):  # stripped and exports nothing: nothing to probe
        resolve_functions(stripped, ["main"], None)
    # stripped, but built with -rdynamic: the exported functions stay in the dynamic table, the static one goes
    exported = tmp_path / "p-exported"
    subprocess.run(["gcc", "-O0", "-rdynamic", "-o", str(exported), str(src)], check=True)
    subprocess.run(["strip", str(exported)], check=True)
    assert resolve_functions(exported, ["visible"], None) == ["visible"]
    with pytest.raises(UsageError, match="not functions of .*helper.*nm -D"):
        resolve_functions(exported, ["helper"], None)


def test_bad_binaries_and_names_are_one_line_usage_errors(tmp_path):
    lib = _libz()
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    cases = [
        (lambda: resolve_functions(lib, ["no_such_function"], None), "not functions of .*no_such_function"),
        (lambda: resolve_functions(script, ["main"], None), "not an ELF"),
        (lambda: resolve_functions(tmp_path / "missing", ["main"], None), "not found"),
        (lambda: resolve_functions(tmp_path, ["main"], None), "directory"),
        (lambda: resolve_functions(lib, None, "^zz_nothing"), "no function of"),
        (lambda: resolve_functions(lib, None, "("), "bad --functions-matching"),
    ]
    for call, message in cases:
        with pytest.raises(UsageError, match=message) as exc:
            call()
        assert "\n" not in str(exc.value)


def test_cli_refuses_before_running(tmp_path, capsys):
    db = tmp_path / "q.db"
    marker = tmp_path / "ran"
    lib = _libz()
    for extra, code in ((["--binary", str(lib), "--functions", "nope_fn"], 2),
                        (["--binary", str(tmp_path / "absent.so"), "--functions", "deflate"], 2),
                        (["--binary", str(tmp_path), "--functions", "deflate"], 2)):
        assert main(["trace", "z@1", *extra, "--store", str(db), "--", "touch", str(marker)]) == code
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("quiho:"), err
    assert not marker.exists()  # the command never ran


def test_generated_script_keeps_to_the_traced_process():
    lib = _libz()
    bt = bpftrace_script(lib, ["deflate"])
    assert f"uprobe:{lib}:deflate /pid == cpid/" in bt
    assert "/pid == cpid/" not in bpftrace_script(lib, ["deflate"], command_only=False)


_COMPRESS = (
    "import random, zlib; r = random.Random(7); "
    "words = [bytes(r.choices(b'etaoinshrdlucmfw', k=r.randint(2, 9))) for _ in range(500)]; "
    "data = b' '.join(r.choices(words, k=12000)); "
    "[zlib.compress(data, {level}) for _ in range(60)]"
)


@pytest.mark.root
@pytest.mark.bpftrace
def test_real_trace_of_deflate_in_the_system_libz(tmp_path, capsys):
    """uprobes on a shared library: Python's zlib.compress at level 1 and 9 (argument with spaces and quotes)."""
    lib = _libz()
    db = tmp_path / "q.db"
    for level in (1, 9, 1, 9):  # interleaved, as quiho profile runs versions
        assert main(["trace", f"z@{level}", "--binary", str(lib), "--functions", "deflate", "--store", str(db),
                     "--json", "--", sys.executable, "-c", _COMPRESS.format(level=level)]) == 0
        doc = json.loads(capsys.readouterr().out)
        # one deflate(Z_FINISH) per compress fits the ~60 KB output in Python's first buffer; other processes
        # of the host calling deflate meanwhile are not recorded (pid == cpid)
        assert doc["functions"] == ["deflate"] and doc["calls"] >= 60, doc
        assert doc["unmatched_entries"] == doc["unmatched_exits"] == doc["mismatched"] == doc["bad_lines"] == 0
    with open_store(db) as st:
        _, c1 = load_version_calls(st, "z@1")
        _, c9 = load_version_calls(st, "z@9")
    assert len(c1) >= 120 and len(c9) >= 120 and (c1.inclusive_ns > 0).all()
    # level 9 searches longer match chains: several times the work per call, far beyond any load effect
    assert c9.inclusive_ns.median() > 1.5 * c1.inclusive_ns.median()
    assert main(["detect", "z@1", "z@9", "--store", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (change,) = doc["changes"]
    assert change["function"] == "deflate" and change["state"] == "degradation" and change["magnitude"] > 0.5
