"""A tiny git repository whose commits change a C program's speed, for the real-history tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# loop iterations: ~0.04 s and ~0.4 s on the 2-core test machines. 10x, not 3x: a whole run on the CI's VM is at
# times 1.2-2.4x slower by chance, and one such revision beside a 3x step once left bisection "not meaningful"
FAST, SLOW = 20_000_000, 200_000_000

PROG = """#include <stdio.h>
/* revision {i}: {note} */
#define N {n}UL
int main(void) {{
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < N; i++) s += i;
    printf("%lu\\n", (unsigned long)s);
    return 0;
}}
"""


def make_slowdown_repo(root: Path, n_commits: int = 24, slow_at: int = 15, broken_at: int | None = 6) -> list[str]:
    """Create ``root`` with ``n_commits`` commits; the loop gets 10x longer at commit ``slow_at``.

    Commit ``broken_at`` does not compile (fixed by the next commit). Returns the shas oldest first.
    """
    root.mkdir(parents=True)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    shas = []
    for i in range(n_commits):
        n = SLOW if i >= slow_at else FAST
        text = PROG.format(i=i, n=n, note="slow loop" if i == slow_at else "tweak")
        if i == broken_at:
            text = text.replace("return 0;", "return 0")  # syntax error: this revision does not build
        (root / "prog.c").write_text(text)
        git("add", "prog.c")
        git("commit", "-q", "-m", f"revision {i}")
        shas.append(git("rev-parse", "HEAD").strip())
    return shas


@pytest.fixture
def make_repo():
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the tiny program")
    return make_slowdown_repo


@pytest.fixture
def slowdown_repo(tmp_path: Path, make_repo) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    return repo, make_repo(repo)
