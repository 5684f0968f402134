"""Collectors: generate a bpftrace (default) or SystemTap script for a binary's functions and run it.

Both scripts print quiho event lines (``KIND TID TS_NS FUNC_ID ARG``, see :mod:`quiho.trace._parse`).

bpftrace: one ``uprobe`` and one ``uretprobe`` per function. Timestamps are ``nsecs`` printed with ``%lu``
(bpftrace 0.17's ``%d`` truncates 64-bit values to 32 bits). Sampling every N-th call keeps the decision of an
entry in a map keyed by (thread, traced-call depth) so that its exit is printed exactly when its entry was,
also under recursion and with many threads. Per-hit cost on this VM is ~11 µs for the trap plus ~11 µs per
printed line (measured with bpftrace 0.17 on a 2-vCPU VM): probe coarse functions, or sample.

SystemTap: the equivalent ``.stp`` script (``process("BIN").function("F").call``/``.return`` probes,
``gettimeofday_ns()``, ``tid()``). It runs where ``stap`` works (kernel modules or the BPF runtime plus debug
info); on this project's CI kernel it does not, so only the generated text and the parser are tested.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from quiho.errors import RunFailed, UsageError

__all__ = ["bpftrace_script", "stap_script", "list_functions", "resolve_functions", "run_bpftrace", "RawTrace"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.$@]*$")


def _check_names(functions: Sequence[str]) -> None:
    if not functions:
        raise UsageError("no functions to trace: give --functions or a --functions-matching that matches")
    for f in functions:
        if not _NAME.match(f):
            raise UsageError(f"not a traceable symbol name: {f!r}")
    if len(set(functions)) != len(functions):
        raise UsageError("a function is listed twice")


def bpftrace_script(binary: Path, functions: Sequence[str], sample: int = 1, capture_arg: bool = True) -> str:
    """The bpftrace program tracing ``functions`` of ``binary``.

    Parameters
    ----------
    binary : Path
        Executable or shared library (made absolute).
    functions : sequence of str
        Symbol names; the position in the list is the FUNC_ID printed.
    sample : int, default 1
        Record every N-th call of each function per thread (1 = every call).
    capture_arg : bool, default True
        Print the first integer argument (``arg0``) of each entry as ARG; 0 otherwise.
    """
    _check_names(functions)
    if sample < 1:
        raise UsageError(f"--sample must be >= 1, got {sample}")
    b = Path(binary).resolve()
    arg = "arg0" if capture_arg else "0"
    out = [f"// quiho trace: {len(functions)} function(s) of {b}, sample 1/{sample}", "BEGIN { }"]
    for i, f in enumerate(functions):
        if sample == 1:
            out.append(f'uprobe:{b}:{f} {{ printf("0 %lu %lu {i} %lu\\n", tid, nsecs, {arg}); }}')
            out.append(f'uretprobe:{b}:{f} {{ printf("1 %lu %lu {i} 0\\n", tid, nsecs); }}')
        else:
            out.append(
                f"uprobe:{b}:{f} {{ @d[tid] = @d[tid] + 1; @n[tid, {i}] = @n[tid, {i}] + 1; "
                f"if ((@n[tid, {i}] - 1) % {sample} == 0) {{ @k[tid, @d[tid]] = 1; "
                f'printf("0 %lu %lu {i} %lu\\n", tid, nsecs, {arg}); }} }}'
            )
            out.append(
                f"uretprobe:{b}:{f} {{ if (@k[tid, @d[tid]] == 1) {{ "
                f'printf("1 %lu %lu {i} 0\\n", tid, nsecs); delete(@k[tid, @d[tid]]); }} '
                f"@d[tid] = @d[tid] - 1; }}"
            )
    if sample > 1:
        out.append("END { clear(@d); clear(@n); clear(@k); }")
    return "\n".join(out) + "\n"


def stap_script(binary: Path, functions: Sequence[str], sample: int = 1, capture_arg: bool = False) -> str:
    """The equivalent SystemTap script (same output format as :func:`bpftrace_script`).

    ``capture_arg`` prints ``ulong_arg(1)``, the first integer argument; without it ARG is 0.
    """
    _check_names(functions)
    if sample < 1:
        raise UsageError(f"--sample must be >= 1, got {sample}")
    b = Path(binary).resolve()
    out = [f"# quiho trace: {len(functions)} function(s) of {b}, sample 1/{sample}", "global d, n, k"]
    for i, f in enumerate(functions):
        argexpr = "ulong_arg(1)" if capture_arg else "0"
        if sample == 1:
            out.append(
                f'probe process("{b}").function("{f}").call {{ '
                f'printf("0 %d %d {i} %d\\n", tid(), gettimeofday_ns(), {argexpr}) }}'
            )
            out.append(
                f'probe process("{b}").function("{f}").return {{ '
                f'printf("1 %d %d {i} 0\\n", tid(), gettimeofday_ns()) }}'
            )
        else:
            out.append(
                f'probe process("{b}").function("{f}").call {{ d[tid()]++; n[tid(), {i}]++; '
                f"if ((n[tid(), {i}] - 1) % {sample} == 0) {{ k[tid(), d[tid()]] = 1; "
                f'printf("0 %d %d {i} %d\\n", tid(), gettimeofday_ns(), {argexpr}) }} }}'
            )
            out.append(
                f'probe process("{b}").function("{f}").return {{ if (k[tid(), d[tid()]] == 1) {{ '
                f'printf("1 %d %d {i} 0\\n", tid(), gettimeofday_ns()); delete k[tid(), d[tid()]] }} '
                f"d[tid()]-- }}"
            )
    return "\n".join(out) + "\n"


def list_functions(binary: Path) -> list[str]:
    """Defined function symbols (``nm`` types T/t/W) of ``binary``, sorted."""
    if shutil.which("nm") is None:
        raise RunFailed("nm (binutils) is needed to list a binary's functions: apt-get install binutils")
    r = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RunFailed(f"nm {binary} failed: {r.stderr.strip()[:200]}")
    out = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "t", "W"):
            out.add(parts[2])
    return sorted(out)


def resolve_functions(binary: Path, functions: Sequence[str] | None, matching: str | None) -> list[str]:
    """The function list: explicit names (checked against the binary), or those matching a regex."""
    if (functions is None) == (matching is None):
        raise UsageError("give exactly one of --functions and --functions-matching")
    have = list_functions(binary)
    if functions is not None:
        missing = [f for f in functions if f not in have]
        if missing:
            raise UsageError(f"not functions of {binary}: {', '.join(missing)} (not found by nm)")
        return list(functions)
    try:
        rx = re.compile(matching or "")
    except re.error as exc:
        raise UsageError(f"bad --functions-matching regex: {exc}") from exc
    found = [f for f in have if rx.search(f)]
    if not found:
        raise UsageError(f"no function of {binary} matches {matching!r}")
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
    command: Sequence[str], binary: Path, functions: Sequence[str], sample: int = 1, timeout: float = 600.0
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
    script = bpftrace_script(binary, functions, sample)
    with tempfile.TemporaryDirectory(prefix="quiho-trace-") as tmp:
        sp, op = Path(tmp) / "trace.bt", Path(tmp) / "events.txt"
        sp.write_text(script)
        cmd = [exe, "-o", str(op), "-c", " ".join(_quote(c) for c in command), str(sp)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise RunFailed(f"traced run exceeded {timeout:.0f} s: {' '.join(command)}") from exc
        text = op.read_bytes() if op.exists() else b""
    if text.startswith(b"Attaching "):  # bpftrace's banner, not an event
        text = text.split(b"\n", 1)[1] if b"\n" in text else b""
    tail = r.stderr.strip()[-500:]
    if r.returncode != 0 and not text.strip():
        raise RunFailed(f"bpftrace failed (exit {r.returncode}): {tail}")
    return RawTrace(text, tuple(functions), script, tuple(command), r.returncode, tail)


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)
