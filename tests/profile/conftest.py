from __future__ import annotations

import pytest

from quiho.datasets import planted_profile
from quiho.irup import ModelParams
from quiho.profile import ProfileResult, analyse_data

#: Fast model settings for planted data (the paper's 1000 trees are not needed to test plumbing).
FAST = ModelParams(n_estimators=100)
HTML_NAME = "<img src=x onerror=alert(1)>&app"


@pytest.fixture(scope="session")
def planted_result() -> ProfileResult:
    """Baseline leans on stream (memory), candidate on cpu, 1.5x the level; names carry HTML."""
    stressors = ("cpu", "matrix", "stream", "zero", "vm", "cache")
    runs, a, b = planted_profile(n_groups=10, spread=0.5, change=1.5, stressors=stressors, application=HTML_NAME,
                                 version_a="v1", version_b="v2<script>")
    runs.loc[(runs["host"] == "g0-h0") & (runs["version"] == "v2<script>"), ["status", "value", "reason"]] = (
        "failed", None, "exit code 3: <b>boom</b>")
    return analyse_data(runs, a, b, application=HTML_NAME, version_a="v1", version_b="v2<script>", unit="s",
                        seeds=3, model_params=FAST, n_jobs=2, fingerprints=a.X.assign(host=a.meta["host"])
                        .groupby("host").median(), fingerprinted_hosts=sorted(set(a.meta["host"])))
