"""Bad checkpoints of the running mean of Phi are refused with the named error (mutation run
of ``phi_mean.py``, docs/MUTATION.md)."""

import numpy as np
import pytest

from dolda.sampler import phi_mean

pytestmark = pytest.mark.power


def _arrays():
    acc = phi_mean.PhiMean(np.array([0, 1, 1, 3], np.int64), np.array([1, 0, 2], np.int32),
                           np.array([0.5, 0.25, 1.0]), np.array([0.1, 0.2, 0.3]), 2)
    return phi_mean.to_arrays(acc)


@pytest.mark.parametrize("field,value", [
    ("phi_mean_ptr", np.empty(0, np.int64)),        # no pointer at all
    ("phi_mean_ptr", np.array([1, 1, 1, 3])),       # does not start at 0
    ("phi_mean_ptr", np.array([0, 1, 1, 2])),       # does not end at nnz
    ("phi_mean_ptr", np.array([0, 2, 1, 3])),       # decreasing
    ("phi_mean_topics", np.array([1, -1, 2])),      # negative topic
    ("phi_mean_topics", np.array([1, 0, 3])),       # topic >= K
])
def test_inconsistent_checkpoints_are_refused_by_name(field, value):
    arrays = _arrays()
    phi_mean.from_arrays(arrays)  # the good one loads
    arrays[field] = value
    with pytest.raises(ValueError, match="phi_mean"):
        phi_mean.from_arrays(arrays)


def test_an_empty_running_mean_is_a_valid_checkpoint():
    acc = phi_mean.from_arrays(phi_mean.to_arrays(phi_mean.empty(4, 3)))
    assert acc.n_draws == 0 and len(acc.ptr) == 5 and len(acc.topics) == 0
    np.testing.assert_array_equal(acc.topic_part, np.zeros(3))
