"""``sampler.alpha``: the prior ``alpha`` as the kernels, the estimators and the model files see it."""

import json

import numpy as np
import pytest

from dolda.sampler.alpha import alpha_json, alpha_value, as_alpha, is_symmetric

pytestmark = pytest.mark.power


@pytest.mark.parametrize("scalar", [0.1, 2, np.float32(0.25), np.array(0.3)])
def test_as_alpha_broadcasts_a_scalar_to_every_topic(scalar):
    for k in (1, 5, np.int64(3)):
        a = as_alpha(scalar, k)
        assert a.dtype == np.float64 and a.shape == (int(k),) and a.flags.c_contiguous
        np.testing.assert_array_equal(a, np.full(int(k), float(scalar)))


def test_as_alpha_keeps_a_vector_of_one_value_per_topic():
    a = as_alpha([1, 2, 3], 3)  # integers become float64
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    one = as_alpha([0.7], 1)
    np.testing.assert_array_equal(one, [0.7])
    strided = np.arange(10, dtype=np.float64)[::2]  # a view the kernels cannot take as is
    a = as_alpha(strided, 5)
    assert a.flags.c_contiguous
    np.testing.assert_array_equal(a, [0.0, 2.0, 4.0, 6.0, 8.0])


@pytest.mark.parametrize("bad, shape", [([0.1, 0.2], "(2,)"), ([[0.1, 0.2, 0.3]], "(1, 3)"),
                                        (np.ones((3, 1)), "(3, 1)"), ([], "(0,)")])
def test_as_alpha_refuses_any_other_shape(bad, shape):
    with pytest.raises(ValueError) as err:
        as_alpha(bad, 3)
    assert str(err.value) == ("alpha must be a number or have one value per topic (3), "
                              f"got shape {shape}")


def test_is_symmetric_sees_any_differing_value():
    assert is_symmetric(0.1) and is_symmetric(np.array(0.1)) and is_symmetric(3)
    assert is_symmetric([0.5]) and is_symmetric(np.full(4, 0.25)) and is_symmetric([2, 2.0])
    for k in range(4):  # one value off, wherever it is
        a = np.full(4, 0.25)
        a[k] = 0.5
        assert not is_symmetric(a)
    assert not is_symmetric([0.25, 0.25 + 2 ** -54 * 8])  # the last bit counts


def test_alpha_value_is_a_float_or_a_copied_vector():
    v = alpha_value(np.float32(0.5))
    assert type(v) is float and v == 0.5
    assert type(alpha_value(2)) is float and alpha_value(2) == 2.0
    source = np.array([0.5, 0.2, 0.05])
    v = alpha_value(source)
    assert isinstance(v, np.ndarray) and v.dtype == np.float64
    np.testing.assert_array_equal(v, source)
    v[0] = 9.0  # a copy: the caller's array is not the estimator's
    assert source[0] == 0.5
    np.testing.assert_array_equal(alpha_value([1, 2]), [1.0, 2.0])
    np.testing.assert_array_equal(alpha_value([0.3]), [0.3])  # a vector of one stays a vector


def test_alpha_json_is_a_float_or_a_list_of_floats():
    v = alpha_json(np.float64(0.1))
    assert type(v) is float and v == 0.1
    v = alpha_json(np.array([0.5, 0.2, 0.05], dtype=np.float32))
    assert type(v) is list and all(type(x) is float for x in v)
    assert v == [float(np.float32(x)) for x in (0.5, 0.2, 0.05)]
    assert alpha_json([0.3]) == [0.3]
    assert json.loads(json.dumps({"alpha": alpha_json([1, 2])})) == {"alpha": [1.0, 2.0]}
