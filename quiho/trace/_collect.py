"""Collectors: generate a bpftrace (default) or SystemTap script for a binary's functions and run it.

Both scripts print quiho event lines (``KIND TID TS_NS FUNC_ID ARG``, see :mod:`quiho.trace._parse`).

bpftrace: one ``uprobe`` and one ``uretprobe`` per function. The entry keeps its time and argument in maps keyed
by (thread, traced-call depth), so recursion and many threads stay apart; the exit reads the clock first and
prints the call's entry and exit lines together. Printing is the expensive part of a probe (a perf-buffer
output per line, several µs on a VM), and done this way none of it falls between a call's own entry and exit
timestamps: a traced leaf call costs its time plus the two traps, not plus two printed lines. Timestamps are
``nsecs`` printed with ``%lu`` (bpftrace 0.17's ``%d`` truncates 64-bit values to 32 bits). Sampling every N-th
call keeps the decision of an entry in the same kind of map, so its exit is printed exactly when its entry was.

SystemTap: the equivalent ``.stp`` script (``process("BIN").function("F").call``/``.return`` probes,
``gettimeofday_ns()``, ``tid()``). It runs where ``stap`` works (kernel modules or the BPF runtime plus debug
info); on this project's CI kernel it does not, so only the generated text and the parser are tested.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quiho._text import printable
from quiho.errors import QuihoError, RunFailed, UsageError

__all__ = ["bpftrace_script", "stap_script", "list_functions", "normalise_symbol", "resolve_functions", "run_bpftrace",
           "RawTrace", "COST_FUNCTION", "COST_CODE", "tracer_cost_of", "measure_tracer_cost"]

#: The tracer-cost run: libc's ``abs`` (three instructions, the first single-stepped out of line, the costly kind
#: of uprobe) called by Python through ctypes and traced with the probe code of every traced function, so the
#: time one call reads is the tracer's own share of each traced call.
COST_FUNCTION = "abs"
COST_CALLS = 3000
COST_CODE = f"import ctypes; f = ctypes.CDLL(None).{COST_FUNCTION}; [f(-i) for i in range({COST_CALLS})]"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.$@]*$")


def _check_names(functions: Sequence[str]) -> None:
    if not functions:
        raise UsageError("no functions to trace: give --functions or a --functions-matching that matches")
    for f in functions:
        if not _NAME.match(f):
            raise UsageError(f"not a traceable symbol name: {f!r}")
    if len(set(functions)) != len(functions):
        raise UsageError("a function is listed twice")


def bpftrace_script(binary: Path | str, functions: Sequence[str], sample: int = 1, capture_arg: bool = True,
                    command_only: bool = True) -> str:
    """The bpftrace program tracing ``functions`` of ``binary``.

    Parameters
    ----------
    binary : Path or str
        Executable or shared library (made absolute); a library name without a slash given as a string
        (``"libc"``) is left for bpftrace to find through the loader's cache, as on the host it runs on.
    functions : sequence of str
        Symbol names; the position in the list is the FUNC_ID printed.
    sample : int, default 1
        Record every N-th call of each function per thread (1 = every call).
    capture_arg : bool, default True
        Print the first integer argument (``arg0``) of each entry as ARG; 0 otherwise.
    command_only : bool, default True
        Record only calls made by the process bpftrace starts (``-c``; predicate ``pid == cpid``). A uprobe
        is system-wide: on a shared library (libc, libz) it fires in every process of the host that calls
        the function. Processes the command forks are not followed (that needs the ``sched`` tracepoints or
        kprobes, which not every kernel offers); use False, and a quiet host, for a forking command.
    """
    _check_names(functions)
    if sample < 1:
        raise UsageError(f"--sample must be >= 1, got {sample}")
    b = binary if isinstance(binary, str) and "/" not in binary else Path(binary).resolve()
    arg = "arg0" if capture_arg else "0"
    pred = " /pid == cpid/" if command_only else ""
    out = [f"// quiho trace: {len(functions)} function(s) of {b}, sample 1/{sample}", "BEGIN { }"]
    key = "@d[tid]"
    for i, f in enumerate(functions):
        kept = f"@a[tid, {key}] = {arg}; @t[tid, {key}] = nsecs; "
        if sample > 1:
            kept = (f"@n[tid, {i}] = @n[tid, {i}] + 1; "
                    f"if ((@n[tid, {i}] - 1) % {sample} == 0) {{ @k[tid, {key}] = 1; {kept}}} ")
        out.append(f"uprobe:{b}:{f}{pred} {{ {key} = {key} + 1; {kept}}}")
        printed = (f'printf("0 %lu %lu {i} %lu\\n1 %lu %lu {i} 0\\n", tid, @t[tid, {key}], @a[tid, {key}], '
                   f"tid, $e); delete(@t[tid, {key}]); delete(@a[tid, {key}]); ")
        if sample > 1:
            printed = f"if (@k[tid, {key}] == 1) {{ {printed}delete(@k[tid, {key}]); }} "
        out.append(f"uretprobe:{b}:{f}{pred} {{ $e = nsecs; {printed}{key} = {key} - 1; }}")
    out.append("END { clear(@d); clear(@t); clear(@a);" + (" clear(@n); clear(@k);" if sample > 1 else "") + " }")
    return "\n".join(out) + "\n"


def stap_script(binary: Path, functions: Sequence[str], sample: int = 1, capture_arg: bool = False,
                command_only: bool = True) -> str:
    """The equivalent SystemTap script (same output format as :func:`bpftrace_script`).

    ``capture_arg`` prints ``ulong_arg(1)``, the first integer argument; without it ARG is 0. ``command_only``
    skips calls of other processes than the one ``stap -c`` starts (``pid() != target()``), as in
    :func:`bpftrace_script`.
    """
    _check_names(functions)
    if sample < 1:
        raise UsageError(f"--sample must be >= 1, got {sample}")
    b = Path(binary).resolve()
    out = [f"# quiho trace: {len(functions)} function(s) of {b}, sample 1/{sample}", "global d, n, k"]
    skip = "if (pid() != target()) next; " if command_only else ""
    for i, f in enumerate(functions):
        argexpr = "ulong_arg(1)" if capture_arg else "0"
        if sample == 1:
            out.append(
                f'probe process("{b}").function("{f}").call {{ {skip}'
                f'printf("0 %d %d {i} %d\\n", tid(), gettimeofday_ns(), {argexpr}) }}'
            )
            out.append(
                f'probe process("{b}").function("{f}").return {{ {skip}'
                f'printf("1 %d %d {i} 0\\n", tid(), gettimeofday_ns()) }}'
            )
        else:
            out.append(
                f'probe process("{b}").function("{f}").call {{ {skip}d[tid()]++; n[tid(), {i}]++; '
                f"if ((n[tid(), {i}] - 1) % {sample} == 0) {{ k[tid(), d[tid()]] = 1; "
                f'printf("0 %d %d {i} %d\\n", tid(), gettimeofday_ns(), {argexpr}) }} }}'
            )
            out.append(
                f'probe process("{b}").function("{f}").return {{ {skip}if (k[tid(), d[tid()]] == 1) {{ '
                f'printf("1 %d %d {i} 0\\n", tid(), gettimeofday_ns()); delete k[tid(), d[tid()]] }} '
                f"d[tid()]-- }}"
            )
    return "\n".join(out) + "\n"


_ELF_MAGIC = b"\x7fELF"
_FUNCTION_TYPES = ("T", "t", "W")  # text symbols and weak text symbols; "i" (IFUNC) is a resolver, not the code


def _check_binary(binary: Path) -> None:
    """One-line :class:`~quiho.errors.UsageError` unless ``binary`` is a readable ELF file."""
    try:
        with open(binary, "rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise UsageError(f"binary {binary} not found") from None
    except IsADirectoryError:
        raise UsageError(f"binary {binary} is a directory, not an ELF file") from None
    except OSError as exc:
        raise UsageError(f"cannot read binary {binary}: {exc.strerror}") from None
    if magic != _ELF_MAGIC:
        raise UsageError(f"{binary} is not an ELF executable or shared library (a script? give --binary)")


def _nm(binary: Path, dynamic: bool) -> dict[str, str]:
    """``{name: type}`` of the defined symbols of one symbol table, names without their version suffix."""
    cmd = ["nm", "--defined-only", *(["-D"] if dynamic else []), str(binary)]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        raise RunFailed(f"nm {binary} failed: {r.stderr.strip()[:200]}")
    out: dict[str, str] = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            name = normalise_symbol(parts[2])
            # a function type wins over another table's / version's non-function entry of the same name
            if out.get(name) not in _FUNCTION_TYPES:
                out[name] = parts[1]
    return out


def normalise_symbol(name: str) -> str:
    """A symbol name without its ELF version suffix: ``deflate@@ZLIB_1.2.0`` and ``deflate@ZLIB_1.2.0`` → ``deflate``.

    uprobes name the symbol without the version (the dynamic symbol table stores it apart, in ``.gnu.version``).
    """
    return name.split("@", 1)[0] if "@" in name[1:] else name


def _symbols(binary: Path) -> dict[str, str]:
    """``{name: nm type}`` over the static and the dynamic symbol table (functions preferred)."""
    if shutil.which("nm") is None:
        raise RunFailed("nm (binutils) is needed to list a binary's functions: apt-get install binutils")
    _check_binary(binary)
    merged = _nm(binary, dynamic=False)
    for name, typ in _nm(binary, dynamic=True).items():
        if merged.get(name) not in _FUNCTION_TYPES:
            merged[name] = typ
    return merged


def list_functions(binary: Path) -> list[str]:
    """Defined function symbols (``nm`` types T/t/W) of ``binary``, sorted.

    The union of the static symbol table (``nm``) and the dynamic one (``nm -D``): stripped executables and
    shared libraries keep their exported functions only in the latter. Version suffixes are removed
    (``deflate@@ZLIB_1.2.0`` → ``deflate``).

    Raises
    ------
    UsageError
        ``binary`` is missing, unreadable or not an ELF file.
    RunFailed
        ``nm`` is not installed or fails on the file.

    Examples
    --------
    >>> "deflate" in list_functions(Path("/lib/x86_64-linux-gnu/libz.so.1"))  # doctest: +SKIP
    True
    """
    return sorted(n for n, t in _symbols(binary).items() if t in _FUNCTION_TYPES)


def resolve_functions(binary: Path, functions: Sequence[str] | None, matching: str | None) -> list[str]:
    """The function list: explicit names (checked against the binary), or those matching a regex.

    Names may carry an ELF version suffix (``deflate@@ZLIB_1.2.0``); the result is without it.

    Raises
    ------
    UsageError
        Neither or both of ``functions``/``matching``; ``binary`` missing or not ELF; a name that is not a
        function of ``binary``; a bad regex or one that matches nothing; a binary with no function symbols.
    """
    if (functions is None) == (matching is None):
        raise UsageError("give exactly one of --functions and --functions-matching")
    syms = _symbols(binary)
    have = sorted(n for n, t in syms.items() if t in _FUNCTION_TYPES)
    if not have:
        raise UsageError(f"{binary} has no function symbols (stripped, and exports none): trace an unstripped "
                         "build or give --binary of the library that holds the functions")
    if functions is not None:
        wanted = [normalise_symbol(f) for f in functions]
        known = set(have)
        missing = [f for f in wanted if f not in known]
        if missing:
            why = {f: f"{f} (an IFUNC resolver, not code: trace the implementation it selects)"
                   for f in missing if syms.get(f) == "i"}
            listed = ", ".join(printable(why.get(f, f)) for f in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            raise UsageError(f"not functions of {binary}: {listed}{more} (not in its symbol tables, nm and nm -D)")
        return wanted
    try:
        rx = re.compile(matching or "")
    except re.error as exc:
        raise UsageError(f"bad --functions-matching regex: {exc}") from exc
    found = [f for f in have if rx.search(f)]
    if not found:
        raise UsageError(f"no function of {binary} matches {printable(matching or '')!r}")
    return found


@dataclass(frozen=True)
class RawTrace:
    """Output of one traced run: the event text plus what produced it."""

    text: bytes
    functions: tuple[str, ...]
    script: str
    command: tuple[str, ...]
    returncode: int
    stderr_tail: str


def run_bpftrace(
    command: Sequence[str], binary: Path | str, functions: Sequence[str], sample: int = 1, timeout: float = 600.0
) -> RawTrace:
    """Run ``command`` under bpftrace with the generated script (needs root and bpftrace).

    Raises
    ------
    RunFailed
        bpftrace is missing, not root, it failed to attach, or timed out.
    """
    exe = shutil.which("bpftrace")
    if exe is None:
        raise RunFailed("bpftrace is not installed: apt-get install bpftrace")
    if os.geteuid() != 0:
        raise RunFailed("bpftrace needs root: run as root")
    if not command:
        raise UsageError("give the command to trace")
    script = bpftrace_script(binary, functions, sample)
    with tempfile.TemporaryDirectory(prefix="quiho-trace-", dir="/tmp") as tmp:
        sp, op, run = Path(tmp) / "trace.bt", Path(tmp) / "events.txt", Path(tmp) / "run.sh"
        sp.write_text(script)
        # bpftrace -c splits its argument at spaces and passes quotes literally, so `python3 -c "a; b"` would
        # reach python as '"a;' 'b"': a shell script that execs the command keeps every argument whole, and
        # exec keeps the process id that the script's `pid == cpid` predicate names
        run.write_text("exec " + " ".join(shlex.quote(c) for c in command) + "\n")
        cmd = [exe, "-o", str(op), "-c", f"/bin/sh {run}", str(sp)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"traced run exceeded {timeout:.0f} s: {' '.join(command)}") from exc
        text = op.read_bytes() if op.exists() else b""
    text = without_banner(text)
    tail = r.stderr.strip()[-500:]
    if r.returncode != 0 and not text.strip():
        raise RunFailed(f"bpftrace failed (exit {r.returncode}): {tail}")
    return RawTrace(text, tuple(functions), script, tuple(command), r.returncode, tail)


def without_banner(text: bytes) -> bytes:
    """The output of bpftrace without its ``Attaching N probes...`` banner line (not an event)."""
    if text.startswith(b"Attaching "):
        return text.split(b"\n", 1)[1] if b"\n" in text else b""
    return text


def tracer_cost_of(text: bytes) -> float | None:
    """The median call of a tracer-cost run's events (ns), or None when fewer than half its calls came back."""
    import numpy as np

    from quiho.trace._events import events_to_calls
    from quiho.trace._parse import parse_events

    try:
        calls, _ = events_to_calls(parse_events(without_banner(text), (COST_FUNCTION,)))
    except QuihoError:
        return None
    # the median, as the first calls pay for page faults and a cold uprobe path
    t = calls["inclusive_ns"].to_numpy(float)
    return float(np.median(t)) if t.size >= COST_CALLS // 2 else None


def measure_tracer_cost(timeout: float = 60.0) -> float | None:
    """The tracer's own time per traced call on this machine (ns), or None when it cannot be measured."""
    import sys

    try:
        raw = run_bpftrace([sys.executable, "-c", COST_CODE], "libc", [COST_FUNCTION], timeout=timeout)
    except RunFailed:
        return None
    return tracer_cost_of(raw.text)
