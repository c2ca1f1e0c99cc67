"""Equal-mass ECE with its bootstrap interval, and the Brier score (issue 48), against cases
computed by hand and brute-force versions written independently of the module's."""

from __future__ import annotations

import numpy as np
import pytest

from dolda.posterior import reliability as r


def _proba(conf_of_top, top, n_classes=2):
    """Rows whose predicted class ``top`` has probability ``conf_of_top``; the rest spread."""
    p = np.zeros((len(top), n_classes))
    for i, (c, t) in enumerate(zip(conf_of_top, top)):
        p[i] = (1.0 - c) / (n_classes - 1)
        p[i, t] = c
    return p


def _ece_mass_brute(proba, y, n_bins):
    """Equal-mass ECE by loops: sort by confidence, cut into n_bins runs of sizes that
    differ by at most one, the larger runs last."""
    conf = [max(row) for row in proba.tolist()]
    pred = [int(np.argmax(row)) for row in proba]
    order = sorted(range(len(conf)), key=lambda i: (conf[i], i))
    n = len(order)
    total, start = 0.0, 0
    for b in range(n_bins):
        stop = ((b + 1) * n) // n_bins
        rows = order[start:stop]
        if rows:
            acc = sum(pred[i] == y[i] for i in rows) / len(rows)
            c = sum(conf[i] for i in rows) / len(rows)
            total += len(rows) / n * abs(acc - c)
        start = stop
    return total


def test_equal_mass_ece_by_hand():
    # four rows, two bins: {0.6 right, 0.7 wrong} and {0.8 right, 0.9 right}
    p = _proba([0.9, 0.6, 0.8, 0.7], [0, 0, 1, 1])
    y = np.array([0, 0, 1, 0])
    # bin 1: accuracy 0.5, confidence 0.65 -> 0.15; bin 2: accuracy 1, confidence 0.85 -> 0.15
    assert r.expected_calibration_error_equal_mass(p, y, n_bins=2) == pytest.approx(0.15)
    # one bin: |0.75 - 0.75| = 0
    assert r.expected_calibration_error_equal_mass(p, y, n_bins=1) == pytest.approx(0.0)
    # a bin per row: mean |correct - confidence| = (0.1 + 0.4 + 0.2 + 0.7) / 4
    assert r.expected_calibration_error_equal_mass(p, y, n_bins=4) == pytest.approx(0.35)
    # more bins than rows: a bin per row
    assert r.expected_calibration_error_equal_mass(p, y, n_bins=15) == pytest.approx(0.35)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_bins", [1, 3, 15])
def test_equal_mass_ece_matches_brute_force(seed, n_bins):
    rng = np.random.default_rng(seed)
    n, L = 101, 4
    p = rng.dirichlet(np.full(L, 0.7), size=n)
    p[::7] = p[3]  # ties in confidence
    y = rng.integers(0, L, n)
    assert r.expected_calibration_error_equal_mass(p, y, n_bins) == pytest.approx(
        _ece_mass_brute(p, y, n_bins), abs=1e-12)


def test_equal_and_equal_width_ece_agree_when_bins_coincide():
    # 15 rows, one per equal-width bin (confidences at the bins' centres): both binnings
    # put one row in every bin
    centres = (np.arange(15) + 0.5) / 15
    keep = centres >= 0.5  # a top-label confidence of two classes is at least 0.5
    conf = centres[keep]
    p = _proba(conf, np.zeros(len(conf), dtype=int))
    y = np.array([0, 1] * 4)[:len(conf)]
    assert r.expected_calibration_error_equal_mass(p, y, len(conf)) == pytest.approx(
        r.expected_calibration_error(p, y, 15))


def test_ece_interval_brackets_the_estimate_and_is_seeded():
    rng = np.random.default_rng(3)
    n, L = 400, 3
    logits = rng.normal(size=(n, L)) * 2
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(L, p=row) for row in p])  # calibrated by construction
    ece, low, high = r.ece_interval(p, y, n_bins=15, n_boot=200, seed=0)
    assert ece == pytest.approx(r.expected_calibration_error_equal_mass(p, y, 15))
    assert low < high
    assert low <= ece + 0.02 and high >= ece - 0.02  # the resampled ECEs sit around it
    assert r.ece_interval(p, y, n_boot=200, seed=0) == (ece, low, high)
    # an overconfident version: every row's top class pushed to 0.99, interval far above
    sharp = _proba(np.full(n, 0.99), np.argmax(p, axis=1), L)
    _, low_sharp, _ = r.ece_interval(sharp, y, n_boot=200, seed=0)
    assert low_sharp > high + 0.05


def test_brier_by_hand_and_brute_force():
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]])
    y = np.array([0, 1, 2])
    # (0.09 + 0.04 + 0.01), (0.01 + 0.81 + 0.64), (4/9 + 1/9 + 1/9)
    assert r.brier_score(p, y) == pytest.approx((0.14 + 1.46 + 6 / 9) / 3)
    rng = np.random.default_rng(5)
    q = rng.dirichlet(np.ones(5), size=60)
    z = rng.integers(0, 5, 60)
    brute = np.mean([sum((q[d, l] - (l == z[d])) ** 2 for l in range(5)) for d in range(60)])
    assert r.brier_score(q, z) == pytest.approx(brute, abs=1e-12)
    assert r.brier_score(np.eye(3), np.arange(3)) == 0.0
    assert r.brier_score(np.eye(3)[[1, 2, 0]], np.arange(3)) == pytest.approx(2.0)


def test_new_scores_are_importable_from_calibration():
    from dolda.posterior import calibration

    assert calibration.brier_score is r.brier_score
    assert calibration.ece_interval is r.ece_interval


def test_plain_sentence_reads_the_numbers():
    # 10 rows said 0.8 (8 right), 5 rows said 0.6 (all right): the 80% tenth is the fullest
    p = np.vstack([_proba(np.full(10, 0.8), np.zeros(10, dtype=int)),
                   _proba(np.full(5, 0.6), np.zeros(5, dtype=int))])
    y = np.array([0] * 8 + [1] * 2 + [0] * 5)
    text = r.plain_sentence(p, y, "the held-out rows")
    assert text.startswith("When the model says about 80%, it was right 80% of the time on "
                           "the held-out rows: 10 of 15 rows")
    assert "about as often as it says" in text
    assert "said 73% on average and was right 87%" in text
    y2 = np.array([0] * 4 + [1] * 6 + [0] * 5)
    assert "right 40% of the time" in r.plain_sentence(p, y2)
    assert "overconfident" in r.plain_sentence(p, y2)


def test_calibration_figures_agree_with_the_single_scores():
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.ones(3), size=80)
    y = rng.integers(0, 3, 80)
    f = r.calibration_figures(p, y)
    assert f["brier"] == r.brier_score(p, y)
    assert f["ece"] == r.expected_calibration_error(p, y, 15)
    assert (f["ece_equal_mass"], f["ece_equal_mass_low"], f["ece_equal_mass_high"]) == \
        r.ece_interval(p, y, 15, 200, 0.9, 0)
