"""Pinned outputs of the change-model detectors and the parametric fits (speed work must be a pure refactor).

The expected numbers in ``tests/data/pinned-detect-models.json`` were computed by the code as it was before the
pipeline-speed work of issue 16 (commit a2b8fc0: ``np.linalg.lstsq`` for every design, ``np.linalg.qr`` for
the HC3 leverages, a Python loop for the exponent searches). Later versions must give the same verdict
labels and kinds, and the same magnitudes, p-values, F statistics, BICs, coefficients and fit statistics to
``rtol = 1e-9`` on the machine that pinned them; elsewhere to :data:`RTOL` (see it, :data:`ATOL` and
:data:`STAT_KEYS` for what another BLAS build moves).
A change that is zero in exact arithmetic (a series against itself) comes out as rounding
noise whose value depends on the order of the sums; there the magnitude (a fraction) may differ by 1e-12 and
the mean change by 1e-12 of the baseline mean.

Cases: seeded synthetic pairs (the 36 Perun-style pairs, null, localized, heavy-noise, noise-free, few distinct
x, spikes, and two 30 000-call pairs that go through the 10 000-point thinning, one with x from 0) and, where
``../shared/data/perun`` is present, Perun's recorded profiles (the 18 stored degradation pairs in both
directions, the vim ``*_all_models`` pair, the tracer pair, the post-processing data points).

Regenerate only on purpose (a deliberate change of results), with the code whose outputs are to be pinned::

    python tests/detect/test_pinned_outputs.py
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from quiho.datasets.perun import FAMILY_NAMES, changed_pair, null_pair, perun_pairs
from quiho.detect import Profile, Samples, detect
from quiho.detect._joint import JointDetector, PolynomialRateDetector
from quiho.models import fit_parametric
from quiho.trace import load_perun_profile

PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned-detect-models.json"
PERUN = Path(__file__).resolve().parents[3] / "shared" / "data" / "perun"
#: Relative tolerance of every number. The pins were equal to 1e-9 on the machine that wrote them (commits fb5c454 to
#: a9bced5: the speed work was a pure refactor there). Another BLAS/LAPACK build (another CPU's kernels, another
#: numpy wheel) sums in another order; measured on an AMD EPYC VM with numpy 2.4.6: converged nonlinear fits
#: (power, exponential) moved by up to 2.7e-7, so numbers are compared to 1e-6 here.
RTOL = 1e-6
#: Absolute floor: values that are zero in exact arithmetic (an exact fit's SSE, a constant model's R²,
#: quadratic terms of a linear series) came out at 1e-16 to 1e-29 on either build, different each time.
ATOL = 1e-12
#: Test statistics of designs that are nearly singular (Perun's ga_* pairs, the few-x pair): the HC3 Wald F moves
#: by 1 % (ga_*) to 4x (few-x, F 593 vs 143, p 7e-47 vs 6e-38) between builds, while its p-value stays far beyond
#: any level. Two p-values are equal when both are below P_FLOOR, an F when its p-values are; else 5 % apart.
STAT_KEYS = ("f_stat", "p_value", "confidence")
#: R² near 0 (an exponential fit to a flat series: -5.00596e-5 vs -5.00599e-5) differs by 2.5e-10 in absolute terms.
R2_ATOL = 1e-9
STAT_RTOL = 0.05
P_FLOOR = 1e-12
METHODS = ("joint", "preg", "lreg")

Pair = tuple[Profile, Profile]


def _one(b: Samples, t: Samples) -> Pair:
    return Profile({"f": b}), Profile({"f": t})


def _synthetic_pairs() -> Iterator[tuple[str, Pair]]:
    for p in perun_pairs(seed=5):
        yield f"perun_pairs/{p.name}", _one(p.baseline, p.target)
    for fam in FAMILY_NAMES:
        yield f"null/{fam}", _one(null_pair(fam, 101).baseline, null_pair(fam, 101).target)
    for name, kw in (("localized", dict(family="exp", shape="localized", size=0.2, seed=1)),
                     ("sqrt", dict(family="quad", shape="sqrt", size=0.2, seed=1)),
                     ("negquad", dict(family="lin", shape="negative-quadratic", size=0.2, seed=1)),
                     ("heavy", dict(family="log", shape="constant", size=0.05, seed=2, noise_kind="heavy")),
                     ("mult", dict(family="pow", shape="linear", size=0.05, seed=3, noise_kind="multiplicative"))):
        p = changed_pair(kw.pop("family"), kw.pop("shape"), kw.pop("size"), **kw)  # type: ignore[arg-type]
        yield f"changed/{name}", _one(p.baseline, p.target)
    x = np.linspace(1, 100, 50)
    base = 10 + 2 * x
    yield "noise-free/constant", _one(Samples.of(x, base), Samples.of(x, base + 5))
    yield "noise-free/linear", _one(Samples.of(x, base), Samples.of(x, base + 0.5 * x))
    yield "noise-free/same", _one(Samples.of(x, base), Samples.of(x, base))
    rng = np.random.default_rng(7)
    xf = np.repeat([1.0, 2.0, 3.0], 20)  # few distinct x: the baseline spline falls back to a polynomial
    yield "few-x", _one(Samples.of(xf, 100 + 5 * xf + rng.normal(0, 1, xf.size)),
                        Samples.of(xf, 104 + 5 * xf + rng.normal(0, 1, xf.size)))
    xs = np.arange(400.0)
    yb = 1000 + rng.normal(0, 10, xs.size)
    yt = 1030 + rng.normal(0, 10, xs.size)
    yb[::37] += 5000  # spikes (preemption): dropped by the robust fit
    yt[::41] += 8000
    yield "spikes", _one(Samples.of(xs, yb), Samples.of(xs, yt))
    # 30 000 calls per side: thinned to 10 000; x = call order from 0 (no ln x column) and from 1
    n = 30_000
    for lo in (0, 1):
        xo = np.arange(lo, lo + n, dtype=float)
        yb = 2000 * rng.lognormal(0, 0.1, n)
        yt = 2000 * rng.lognormal(0, 0.1, n) * (1.2 if lo == 0 else 1.0) + 0.002 * xo
        yield f"thinned/x-from-{lo}", _one(Samples.of(xo, yb), Samples.of(xo, yt))


def _perun_pairs(root: Path) -> Iterator[tuple[str, Pair]]:
    d = root / "degradation_profiles"

    def load(name: str) -> Profile:
        return load_perun_profile(d / name)

    def only(name: str) -> Samples:
        return next(iter(load(name).functions.values()))

    for fam in FAMILY_NAMES:
        for k in (2, 3, 4):
            b, t = only(f"{fam}1.perf"), only(f"{fam}{k}.perf")
            yield f"perun/{fam}1-{fam}{k}", _one(b, t)
            yield f"perun/{fam}{k}-{fam}1", _one(t, b)
    yield "perun/all_models", (load("baseline_all_models.perf"), load("target_all_models.perf"))
    yield "perun/tracer", (load("tracer_baseline.perf"), load("tracer_target.perf"))
    yield "perun/tracer-reversed", (load("tracer_target.perf"), load("tracer_baseline.perf"))


def _change_record(c: Any) -> dict[str, Any]:
    s = c.support
    keys = ("baseline_mean", "mean_change", "f_stat", "bic", "shape", "n_baseline", "n_target", "reason")
    return {"state": c.state.value, "kind": c.kind, "magnitude": c.magnitude, "confidence": c.confidence,
            "p_value": c.p_value, **{k: s[k] for k in keys if k in s}}


def _detect_records(pairs: Iterator[tuple[str, Pair]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (b, t) in pairs:
        for c in detect(b, t, METHODS):
            out[f"{name}|{c.method}|{c.function}"] = _change_record(c)
    return out


def _synthetic_model_data() -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    x = np.linspace(1, 100, 200)
    for fam, f in (("linear", lambda v: 8 + 2.5 * v), ("power", lambda v: 3 * v**1.7),
                   ("exponential", lambda v: 0.5 * np.exp(0.05 * v)), ("log", lambda v: 2 + 4 * np.log(v))):
        y = f(x)
        yield f"{fam}/exact", x, y
        yield f"{fam}/noisy", x, y + rng.normal(0, 0.05 * float(np.abs(y).mean()), x.size)
    # bench-like: 250 000 calls, x = call order from 0 (the exponent search subsamples 20 000 points)
    n = 250_000
    xo = np.arange(n, dtype=float)
    yield "order-from-0", xo, 1600 * rng.lognormal(0, 0.1, n)
    yield "order-from-1", xo + 1, 1600 * rng.lognormal(0, 0.1, n) + 0.001 * xo


def _perun_model_data(root: Path) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    for path in sorted((root / "postprocess_profiles").glob("*.perf")):
        doc = json.loads(path.read_text())
        acc: dict[str, tuple[list[float], list[float]]] = {}
        for key, res in doc["resources"].items():
            uid = doc["resource_type_map"][key]["uid"]
            acc.setdefault(uid, ([], []))
            acc[uid][0].extend(res["structure-unit-size"])
            acc[uid][1].extend(res["amount"])
        for uid, (xs, ys) in sorted(acc.items()):
            yield f"postprocess/{path.stem}/{uid}", np.array(xs, float), np.array(ys, float)
    for name in ("const1", "lin3", "exp4", "tracer_target"):
        prof = load_perun_profile(root / "degradation_profiles" / f"{name}.perf")
        for fn, s in sorted(prof.functions.items()):
            if len(s) >= 10:
                yield f"degradation/{name}/{fn}", s.x, s.y


def _model_records(data: Iterator[tuple[str, np.ndarray, np.ndarray]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, x, y in data:
        fits = fit_parametric(x, y)
        out[name] = {"best": fits.best.family if fits.best else None,
                     "fits": {f.family: {"coeffs": list(f.coeffs), "r2": f.r2, "aic": f.aic, "bic": f.bic,
                                         "sse": f.sse, "meaningful": f.meaningful, "note": f.note}
                              for f in fits.fits}}
    return out


SECTIONS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "detect/synthetic": lambda root: _detect_records(_synthetic_pairs()),
    "detect/perun": lambda root: _detect_records(_perun_pairs(root)),
    "models/synthetic": lambda root: _model_records(_synthetic_model_data()),
    "models/perun": lambda root: _model_records(_perun_model_data(root)),
}


def _zero_tolerance(record: dict[str, Any]) -> dict[str, float]:
    """Absolute tolerances of a detector record's change, for changes that are zero in exact arithmetic."""
    if "magnitude" not in record or not isinstance(record.get("baseline_mean"), float):
        return {}
    return {"magnitude": 1e-12, "mean_change": 1e-12 * abs(record["baseline_mean"])}


def _stats_agree(want: dict[str, Any], got: dict[str, Any], k: str) -> bool:
    """A detector record's test statistic ``k`` agrees between builds (see :data:`STAT_KEYS`)."""
    p_w, p_g = want.get("p_value"), got.get("p_value")
    if isinstance(p_w, float) and isinstance(p_g, float) and p_w < P_FLOOR and p_g < P_FLOOR:
        return True  # both p-values (hence F and confidence) far beyond any level
    w, g = want[k], got[k]
    if not isinstance(g, int | float):
        return False
    if k == "p_value" and 0 < w < 1 and 0 < g < 1:  # on the scale of the statistic: -log p (7e-7 vs 6e-7 at F 1 %)
        return math.isclose(-math.log(w), -math.log(g), rel_tol=STAT_RTOL)
    return math.isclose(w, g, rel_tol=STAT_RTOL, abs_tol=ATOL)


def _close(want: Any, got: Any, where: str, bad: list[str], atol: float = ATOL) -> None:
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(want) != set(got):
            bad.append(f"{where}: keys {sorted(want) if isinstance(want, dict) else want} vs {got}")
            return
        zero = _zero_tolerance(want)
        for k in want:
            if k in STAT_KEYS and isinstance(want[k], float) and not math.isnan(want[k]) and _stats_agree(want, got, k):
                continue
            # R² = 1 - SSE/SST: its error is absolute (on the scale of 1), not relative to an R² near 0
            _close(want[k], got[k], f"{where}.{k}", bad, max(zero.get(k, ATOL), R2_ATOL if k == "r2" else ATOL))
    elif isinstance(want, list):
        if not isinstance(got, list) or len(want) != len(got):
            bad.append(f"{where}: {want} vs {got}")
            return
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            _close(a, b, f"{where}[{i}]", bad)
    elif isinstance(want, float) and not isinstance(want, bool):
        g = float(got) if isinstance(got, int | float) and not isinstance(got, bool) else None
        if g is None:
            bad.append(f"{where}: {want!r} vs {got!r}")
        elif math.isnan(want):
            if not math.isnan(g):
                bad.append(f"{where}: nan vs {g!r}")
        elif math.isinf(want) or math.isinf(g):
            if want != g:
                bad.append(f"{where}: {want!r} vs {g!r}")
        elif not math.isclose(want, g, rel_tol=RTOL, abs_tol=atol):
            bad.append(f"{where}: {want!r} vs {g!r} (rel {abs(g - want) / max(abs(want), 1e-300):.2e})")
    elif want != got:
        bad.append(f"{where}: {want!r} vs {got!r}")


def _normalise(doc: Any) -> Any:
    """What the JSON file holds: tuples as lists, numpy scalars as Python numbers."""
    return json.loads(json.dumps(doc, default=lambda v: v.item()))


@pytest.fixture(scope="module")
def pinned() -> dict[str, Any]:
    return json.loads(PINNED.read_text())


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_outputs_equal_the_pinned_ones(section, pinned, shared_data):  # noqa: ANN001
    root = shared_data("perun") if section.endswith("/perun") else PERUN
    got = _normalise(SECTIONS[section](root))
    want = pinned[section]
    assert len(want) >= 10
    bad: list[str] = []
    _close(want, got, section, bad)
    assert bad == [], "\n".join(bad[:20])


def test_threads_do_not_change_verdicts(monkeypatch):  # noqa: ANN001
    """Several functions fitted at once (threads) give exactly the verdicts of one at a time."""
    pairs = dict(_synthetic_pairs())
    names = ("thinned/x-from-0", "changed/localized", "spikes", "few-x")
    b = Profile({n: pairs[n][0].functions["f"] for n in names})
    t = Profile({n: pairs[n][1].functions["f"] for n in names})
    runs = {}
    for threads in (1, 2, 3):
        for cls in (JointDetector, PolynomialRateDetector):
            monkeypatch.setattr(cls, "threads", threads)
        runs[threads] = [c.to_dict() for c in detect(b, t, ["joint", "preg"])]
    assert len(runs[1]) == 8 and any(c["state"] == "degradation" for c in runs[1])
    assert json.dumps(runs[1]) == json.dumps(runs[2]) == json.dumps(runs[3])


def test_the_comparison_can_fail(pinned):  # noqa: ANN001
    want = pinned["detect/synthetic"]
    key = next(k for k in want if k.endswith("|joint|f") and want[k]["state"] == "degradation")
    moved = json.loads(json.dumps(want))
    moved[key]["magnitude"] *= 1 + 10 * RTOL
    bad: list[str] = []
    _close(want, moved, "x", bad)
    assert len(bad) == 1 and "magnitude" in bad[0]
    moved[key]["magnitude"] = want[key]["magnitude"]
    moved[key]["kind"] = "other"
    bad = []
    _close(want, moved, "x", bad)
    assert len(bad) == 1 and "kind" in bad[0]


if __name__ == "__main__":
    if not PERUN.exists():
        sys.exit(f"needs {PERUN} to pin the Perun sections")
    PINNED.write_text(json.dumps({s: _normalise(f(PERUN)) for s, f in SECTIONS.items()}, indent=1,
                                 sort_keys=True) + "\n")
    print(f"wrote {PINNED}")
