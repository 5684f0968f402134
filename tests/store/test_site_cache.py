"""The ``site_cache`` component on each backend: one result per subject, and subjects gone from the store dropped."""

from __future__ import annotations

from quiho.store import open_store
from quiho.store.site_cache import cached_results, prune_results, save_results


def _rows(st) -> list[tuple[str, str, str]]:  # noqa: ANN001
    return sorted((str(r[0]), str(r[1]), str(r[2])) for r in st.conn.execute(
        "SELECT kind, subject, input_key FROM site_results").fetchall())


def test_one_result_per_subject_and_gone_subjects_are_pruned(store_spec: str) -> None:
    with open_store(store_spec) as st:
        save_results(st, "irup", {"k1": ("app@v1", {"top": ["cpu"]}), "k2": ("app@v2", {"top": ["stream"]})})
        save_results(st, "series", {"s1": ("app@v1", {"verdict": None})})  # same subject, another kind
        assert cached_results(st, ["k1", "k2", "nope"]) == {"k1": {"top": ["cpu"]}, "k2": {"top": ["stream"]}}
        save_results(st, "irup", {"k3": ("app@v1", {"top": ["vm"]})})  # app@v1's input changed: k1 is dropped
        assert _rows(st) == [("irup", "app@v1", "k3"), ("irup", "app@v2", "k2"), ("series", "app@v1", "s1")]
        assert prune_results(st, "irup", ["app@v1"]) == 1  # app@v2 left the store
        assert _rows(st) == [("irup", "app@v1", "k3"), ("series", "app@v1", "s1")]
        assert prune_results(st, "irup", ["app@v1"]) == 0
        many = [f"t{i}" for i in range(1200)]  # more subjects than one IN list holds
        save_results(st, "irup", {f"key{i}": (s, {}) for i, s in enumerate(many)})
        assert prune_results(st, "irup", many[:5]) == 1196 and prune_results(st, "series", []) == 1
        assert _rows(st) == [("irup", s, f"key{i}") for i, s in enumerate(many[:5])]
