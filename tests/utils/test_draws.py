"""BlockDraws under common numpy idioms, against the dense array (dolda.utils.draws)."""

import numpy as np
import pytest

from dolda.utils.draws import BlockDraws


@pytest.fixture
def pair():
    rng = np.random.default_rng(5)
    rest = rng.normal(size=(6, 3, 4)).astype(np.float32)
    words = rng.normal(size=(6, 3, 5)).astype(np.float16)
    draws = BlockDraws(rest, words, 2)
    dense = np.concatenate([rest[:, :, :2], words.astype(np.float32), rest[:, :, 2:]], axis=2)
    return draws, dense


@pytest.mark.parametrize("idiom", [
    lambda a: np.mean(a, axis=0), lambda a: np.mean(a), lambda a: a * 2, lambda a: 2 - a,
    lambda a: -a, lambda a: a.sum(), lambda a: a.sum(axis=(0, 2)), lambda a: a.std(axis=0),
    lambda a: a.min(), lambda a: a.max(axis=1), lambda a: a.var(ddof=1),
    lambda a: np.exp(a), lambda a: np.quantile(a, [0.1, 0.9], axis=0),
    lambda a: np.concatenate([a, a]), lambda a: a > 0, lambda a: np.sum(a, axis=0),
    lambda a: np.array(a, copy=True), lambda a: np.asarray(a, dtype=np.float64),
    lambda a: a.mean(axis=0), lambda a: np.stack(list(a)), lambda a: a @ np.ones(9)])
def test_idioms_match_the_dense_array(pair, idiom):
    draws, dense = pair
    # float32 sums may differ in the last bits by order of summation
    np.testing.assert_allclose(idiom(draws), idiom(dense), rtol=1e-5, atol=1e-6)


def test_array_protocol_and_shape(pair):
    draws, dense = pair
    assert (draws.shape, draws.ndim, draws.dtype, len(draws), draws.size) == \
        (dense.shape, dense.ndim, dense.dtype, len(dense), dense.size)
    assert len(list(draws)) == len(dense)
    with pytest.raises(ValueError, match="always a copy"):
        np.array(draws, copy=False)


def test_in_place_operations_are_refused(pair):
    draws, _ = pair
    with pytest.raises(TypeError, match="read-only"):
        draws += 1
