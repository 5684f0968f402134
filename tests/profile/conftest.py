from __future__ import annotations

from quiho.irup import ModelParams

from ..conftest import FAST_TREES  # noqa: TID252

#: Fast model settings for planted data (the paper's 1000 trees are not needed to test plumbing).
FAST = ModelParams(n_estimators=FAST_TREES)
