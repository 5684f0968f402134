import numpy as np
import pandas as pd

from quiho.datasets import planted_bottleneck
from quiho.irup import hardware_groups, load_fingerprints

PG_UTAH = ("d2100", "d430", "d530", "d710", "d820", "pc3000")


def _batch_rows(store, batch):
    run = store.conn.execute(
        "SELECT id FROM fingerprint_runs WHERE source='quiho-popper' AND batch=?", (batch,)
    ).fetchone()[0]
    fp = load_fingerprints(store, [run])
    wide = fp.pivot_table(index=["host", "repetition"], columns="stressor", values="value").dropna()
    units = wide.index.get_level_values("host").to_numpy()
    return wide.reset_index(drop=True), units


def test_june_pg_utah_hosts_form_one_group(popper_store):
    for batch in ("1497506400000", "1497974400000"):
        X, units = _batch_rows(popper_store, batch)
        hw = hardware_groups(X, units)
        labels = {u.split(".")[0]: g for u, g in hw.unit_groups.items()}
        assert len({labels[h] for h in PG_UTAH}) == 1, labels
        # ...and nothing else shares their hardware (pc3000-class, 2 CPUs / 2 GB in June).
        assert sum(1 for g in labels.values() if g == labels["d430"]) == len(PG_UTAH)
        assert hw.n_groups < hw.n_units  # fewer machines than names


def test_groups_match_real_hardware_from_raw_yaml(popper_store, shared_data):
    # stress-ng's own system-info (cpus, RAM, kernel) in the raw YAML is the ground truth.
    import csv

    raw = shared_data("quiho-popper/derived/stressng_raw_metrics.csv")
    truth = {}
    with raw.open() as fh:
        for row in csv.DictReader(fh):
            if row["timestamp"] == "1497506400000":
                truth[row["machine"]] = (row["cpus"], row["totalram_bytes"], row["kernel_release"])
    X, units = _batch_rows(popper_store, "1497506400000")
    hw = hardware_groups(X, units)
    # Same group => same hardware description (the converse can fail: pc2400 and pc3300 were
    # different machines with the same cpus/RAM, and their fingerprints tell them apart).
    for g, members in hw.members().items():
        assert len({truth[m] for m in members}) == 1, (g, members)


def test_planted_groups_recovered_exactly():
    d = planted_bottleneck(n_groups=7, hosts_per_group=3, reps=2, random_state=3)
    units = d.meta["host"].to_numpy()
    hw = hardware_groups(d.X, units)
    true = {h: h.split("-")[0] for h in units}
    assert hw.n_groups == 7
    for members in hw.members().values():
        assert len({true[m] for m in members}) == 1


def test_groups_invariant_to_row_order_and_scale():
    d = planted_bottleneck(n_groups=6, hosts_per_group=2, reps=3, random_state=5)
    units = d.meta["host"].to_numpy()
    a = hardware_groups(d.X, units)
    perm = np.random.default_rng(0).permutation(len(units))
    b = hardware_groups(pd.DataFrame(d.X.to_numpy()[perm] * 7.5, columns=d.X.columns), units[perm])
    assert a.unit_groups == b.unit_groups
