"""Class labels as column indices, shared by every classifier of the package.

``encode_labels`` checks ``y`` as scikit-learn does (a 1-d array of the samples' length,
at least two classes) and returns the sorted classes and each sample's index.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d


def encode_labels(y, n_samples: int, estimator=None):
    """Return ``(classes, y_index)`` through scikit-learn's target checks.

    ``y`` goes through :func:`sklearn.utils.validation.column_or_1d` (a column
    vector is raveled with a ``DataConversionWarning``) and
    :func:`sklearn.utils.multiclass.check_classification_targets` (continuous,
    multi-output and unknown targets are refused); the classes are
    ``np.unique(y)``, so they keep the labels' dtype (int labels give int
    ``classes_``, booleans give bool), exactly as ``LabelEncoder`` would.

    Parameters
    ----------
    y : array-like (D,)
    n_samples : int
        ``D``, the number of rows of the input the labels belong to.
    estimator : estimator or None
        Named in the message when ``y`` is None.

    Returns
    -------
    classes : ndarray (L,)
        Sorted distinct labels.
    y_index : int64 ndarray (D,)
        ``classes[y_index] == y``.

    Raises
    ------
    ValueError
        ``y`` is None, of the wrong length, has missing labels, is continuous,
        or holds a single class.
    TypeError
        Labels that cannot be ordered (e.g. a mix of str and int in an object array).
    """
    if y is None:
        name = type(estimator).__name__ if estimator is not None else "this classifier"
        raise ValueError(f"{name} requires y to be passed, but the target y is None")
    if isinstance(y, (list, tuple)):
        kinds = {"text" if isinstance(v, str) else "number" if isinstance(v, (int, float, np.number))
                 else type(v).__name__ for v in y}
        if "text" in kinds and "number" in kinds:  # numpy would turn 1 into "1" silently
            raise TypeError("labels in y must be mutually comparable: y mixes strings and "
                            "numbers; give all labels as strings or all as numbers")
    y = column_or_1d(y, warn=True)
    if len(y) != n_samples:
        raise ValueError(
            f"X and y have different lengths: X has {n_samples} rows, y has {len(y)} labels"
        )
    if y.dtype == object:
        missing = [i for i, v in enumerate(y) if v is None or (isinstance(v, float) and v != v)]
        if missing:
            raise ValueError(f"y has missing labels (None/NaN) at rows {missing[:5]}")
        if len(y) and all(isinstance(v, (bool, np.bool_)) for v in y):
            y = y.astype(bool)  # e.g. an object column of True/False: bool classes_
    try:
        check_classification_targets(y)
        classes, y_index = np.unique(y, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"labels in y must be mutually comparable: {exc}") from None
    if len(classes) < 2:
        raise ValueError(
            f"y has a single class ({classes[0]!r}); a classifier needs at least 2 classes"
        )
    return classes, y_index.astype(np.int64).reshape(-1)
