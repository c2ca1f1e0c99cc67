"""Design matrices from tabular covariates: one-hot categorical columns, numeric columns.

:class:`CovariateEncoder` turns a pandas DataFrame into the covariate matrix
``X`` of :class:`dolda.DOProbit` (and of DOLDA): numeric columns are kept
(optionally standardised), categorical columns become one indicator column per
level with a readable name ``"column=level"`` (``"DirectedBy=Jackie Chan"``).
The intercept is not added here; the estimators add it.
"""

from __future__ import annotations

import logging
import numbers
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils.validation import check_covariate_scale, check_frame_columns

logger = logging.getLogger(__name__)

#: ``sparse_output="auto"`` returns CSR once there are more one-hot columns than this.
SPARSE_MIN_ONE_HOT = 1000

#: Name of the pooled level of rare (and, at transform, unseen) levels.
OTHER = "other"


def _is_categorical(series: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


#: A text column is taken for a numeric one with stray cells when at most this many
#: (and at most :data:`STRAY_SHARE` of its non-missing cells) are not numbers.
MAX_STRAY_CELLS = 5
STRAY_SHARE = 0.05


def _refuse_nearly_numeric(series: pd.Series, col) -> None:
    """Refuse a column that is numeric but for a few cells (e.g. one ``"n/a"`` or ``"12,5"``).

    Such a column would silently become one indicator per distinct number.
    """
    if pd.api.types.is_bool_dtype(series) or isinstance(series.dtype, pd.CategoricalDtype):
        return
    present = series.dropna()
    if len(present) == 0 or not (present.dtype == object or pd.api.types.is_string_dtype(present)):
        return
    if not all(isinstance(v, (str, numbers.Number)) for v in present.iloc[:1000]):
        return
    numeric = pd.to_numeric(present, errors="coerce")
    stray = numeric.isna()
    n_stray = int(stray.sum())
    if 0 < n_stray <= MAX_STRAY_CELLS and n_stray <= STRAY_SHARE * len(present) \
            and numeric.nunique() >= 3:
        rows = [int(i) if isinstance(i, numbers.Integral) else i for i in present.index[stray][:5]]
        cells = present[stray].astype(str).tolist()[:5]
        raise ValueError(
            f"covariate column {col!r} is numeric except for {n_stray} cell(s) {cells} at "
            f"row(s) {rows}; fix or blank those cells, or pass it in categorical=[...] to "
            "one-hot encode it on purpose")


class CovariateEncoder(TransformerMixin, BaseEstimator):
    """One-hot and numeric encoding of a DataFrame into a covariate matrix ``X`` (D x n_features).

    Parameters
    ----------
    columns : list of str or None, default=None
        Columns to encode, in this order; None takes every column of the
        DataFrame given to ``fit``.
    categorical : list of str or None, default=None
        Columns to one-hot encode.  None: every column whose dtype is not
        numeric (object, string, category, bool).
    min_count : int, default=1
        Levels seen fewer than ``min_count`` times in ``fit`` are pooled into
        one column ``"column=other"`` (created only when some level is pooled;
        a level that is itself called ``"other"`` then joins the pool, so the
        name stays unique).
    standardize : bool, default=False
        Centre numeric columns and divide them by their standard deviation
        (constant columns are only centred).  One-hot columns are never scaled.
    sparse_output : {"auto", True, False}, default="auto"
        True: ``transform`` returns a scipy.sparse CSR matrix; False: a dense
        ndarray; "auto": CSR when there are more than
        :data:`SPARSE_MIN_ONE_HOT` one-hot columns, dense otherwise.

    Attributes
    ----------
    feature_names_in_ : ndarray of str
        The encoded input columns.
    n_features_in_ : int
    categories_ : dict of str -> ndarray
        Kept levels of every categorical column (as strings, sorted), without "other".
    pooled_ : dict of str -> bool
        Whether the column has an ``"other"`` level.
    mean_, scale_ : dict of str -> float
        Standardisation of the numeric columns (0 and 1 when ``standardize=False``).
    feature_names_out_ : ndarray of str (n_features,)
        Names of the output columns: numeric columns keep their name, one-hot
        columns are ``"column=level"`` in the column order of ``columns``.
    n_features_out_ : int

    Notes
    -----
    * All levels are kept (no reference level is dropped): the intercept and the
      prior identify the coefficients, and with a Horseshoe prior every level
      competes on equal terms.
    * A missing value (NaN/None) in a categorical column gives an all-zero row
      for that column, in ``fit`` and at prediction alike, with a ``UserWarning``
      naming the column and the rows; a missing value in a numeric column is an
      error.
    * At ``transform``, a level not seen in ``fit`` goes to ``"column=other"``
      when the column has one, otherwise to an all-zero row; either way a
      ``UserWarning`` names the column and a few such levels.
    """

    def __init__(self, columns=None, categorical=None, min_count=1, standardize=False,
                 sparse_output="auto"):
        self.columns = columns
        self.categorical = categorical
        self.min_count = min_count
        self.standardize = standardize
        self.sparse_output = sparse_output

    # ------------------------------------------------------------------ fit
    @staticmethod
    def _check_frame(X):
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"CovariateEncoder needs a pandas DataFrame, got {type(X).__name__}")

    def fit(self, X, y=None):
        """Learn the levels and numeric scalings from the DataFrame ``X`` (D rows).

        Returns
        -------
        self
        """
        self._check_frame(X)
        if (isinstance(self.min_count, bool) or not isinstance(self.min_count, numbers.Integral)
                or self.min_count < 1):
            raise ValueError(f"min_count must be an integer >= 1, got {self.min_count!r}")
        if self.sparse_output not in ("auto", True, False):
            raise ValueError(f"sparse_output must be 'auto', True or False; got "
                             f"{self.sparse_output!r}")
        columns = list(X.columns) if self.columns is None else list(self.columns)
        columns = self._check_columns(X, columns)
        if self.categorical is None:
            categorical = [c for c in columns if _is_categorical(X[c])]
            for c in categorical:
                _refuse_nearly_numeric(X[c], c)
        else:
            categorical = list(self.categorical)
            stray = [c for c in categorical if c not in columns]
            if stray:
                raise ValueError(f"categorical columns {stray} are not among the encoded "
                                 f"columns {columns}")
        self.feature_names_in_ = np.array([str(c) for c in columns], dtype=object)
        self.n_features_in_ = len(columns)
        self._columns = columns
        self._categorical = set(categorical)
        self.categories_, self.pooled_, self.mean_, self.scale_ = {}, {}, {}, {}
        self._rare = {}
        names = []
        n_one_hot = 0
        for col in columns:
            if col in self._categorical:
                values = X[col].dropna().astype(str)
                counts = values.value_counts()
                rare = set(counts.index[counts < self.min_count])
                pooled = bool(rare)
                if pooled:
                    # a real level called "other" joins the pool: one "column=other"
                    rare |= {OTHER} & set(counts.index)
                kept = np.sort(np.array([v for v in counts.index if v not in rare], dtype=object))
                self.categories_[col] = kept
                self.pooled_[col] = pooled
                self._rare[col] = rare
                levels = list(kept) + ([OTHER] if pooled else [])
                names += [f"{col}={level}" for level in levels]
                n_one_hot += len(levels)
            else:
                values = self._numeric(X, col)
                mean, scale = 0.0, 1.0
                if self.standardize:
                    mean = float(values.mean())
                    sd = float(values.std())
                    scale = sd if sd > 0 else 1.0
                self.mean_[col], self.scale_[col] = mean, scale
                names.append(str(col))
        self.feature_names_out_ = np.array(names, dtype=object)
        self.n_features_out_ = len(names)
        self._sparse = (self.sparse_output is True
                        or (self.sparse_output == "auto" and n_one_hot > SPARSE_MIN_ONE_HOT))
        logger.info("CovariateEncoder: %d columns in, %d out (%d one-hot)",
                    len(columns), len(names), n_one_hot)
        return self

    @staticmethod
    def _check_columns(X, columns):
        """The keys of ``X`` holding ``columns``; a column may also be matched by ``str(key)``.

        (:meth:`from_dict` knows the column names only as strings, so a frame with
        integer column labels must still be found.)
        """
        check_frame_columns(X, columns)
        by_name = {}
        for key in X.columns:
            by_name.setdefault(str(key), key)
        keys, missing = [], []
        for c in columns:
            if c in X.columns:
                keys.append(c)
            elif str(c) in by_name:
                keys.append(by_name[str(c)])
            else:
                missing.append(c)
        if missing:
            raise ValueError(f"column(s) {missing} missing from X; X has columns "
                             f"{list(X.columns)}")
        return keys

    @staticmethod
    def _numeric(X, col):
        values = pd.to_numeric(X[col], errors="coerce").to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(values)):
            bad = np.flatnonzero(~np.isfinite(values))[:5].tolist()
            raise ValueError(f"numeric column {col!r} has missing, non-numeric or infinite "
                             f"values at rows {bad}")
        check_covariate_scale(values, str(col))
        return values

    # ------------------------------------------------------------ transform
    def transform(self, X):
        """Encode ``X`` with the levels learnt in ``fit``.

        Returns
        -------
        scipy.sparse.csr_matrix or ndarray, shape (D, n_features_out_)
        """
        check_is_fitted(self, "feature_names_out_")
        self._check_frame(X)
        keys = self._check_columns(X, self._columns)
        n_rows = len(X)
        rows, cols, vals = [], [], []
        offset = 0
        row_index = np.arange(n_rows)
        for col, key in zip(self._columns, keys):
            if col in self._categorical:
                kept = self.categories_[col]
                raw = X[key]
                present = raw.notna().to_numpy()
                text = raw.astype(str).where(raw.notna())
                # position in the kept levels, -1 for missing, rare or unseen values
                codes = pd.Index(kept, dtype=object).get_indexer(text).astype(np.int64)
                if not present.all():
                    where = np.flatnonzero(~present)
                    shown = where[:5].tolist()
                    warnings.warn(
                        f"column {col!r}: {len(where)} missing value(s) (row(s) {shown}"
                        f"{' ...' if len(where) > 5 else ''}) are encoded as an all-zero "
                        "row (no level of the column), in fit and at prediction alike",
                        UserWarning, stacklevel=2)
                outside = present & (codes < 0)
                unseen = outside & ~text.isin(self._rare[col]).to_numpy()
                if unseen.any():
                    fresh = pd.unique(text[unseen])
                    target = "'other'" if self.pooled_[col] else "all-zero rows"
                    warnings.warn(
                        f"column {col!r}: {unseen.sum()} value(s) of {len(fresh)} level(s) not "
                        f"seen in fit (e.g. {list(fresh[:3])}) are encoded as {target}",
                        UserWarning, stacklevel=2)
                if self.pooled_[col]:
                    codes[outside] = len(kept)  # rare and unseen levels alike
                hit = codes >= 0
                rows.append(row_index[hit])
                cols.append(offset + codes[hit])
                vals.append(np.ones(int(hit.sum())))
                offset += len(kept) + int(self.pooled_[col])
            else:
                values = (self._numeric(X, key) - self.mean_[col]) / self.scale_[col]
                rows.append(row_index)
                cols.append(np.full(n_rows, offset))
                vals.append(values)
                offset += 1
        out = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                            shape=(n_rows, self.n_features_out_))
        out.sort_indices()
        return out if self._sparse else out.toarray()

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns, ``"column=level"`` for one-hot ones (ndarray of str)."""
        check_is_fitted(self, "feature_names_out_")
        return self.feature_names_out_.copy()

    # ---------------------------------------------------------- persistence
    def to_dict(self) -> dict:
        """JSON-encodable description of the fitted encoder (for model files; no pickle)."""
        check_is_fitted(self, "feature_names_out_")
        return {
            "params": {"columns": None if self.columns is None else list(self.columns),
                       "categorical": (None if self.categorical is None
                                       else list(self.categorical)),
                       "min_count": int(self.min_count), "standardize": bool(self.standardize),
                       "sparse_output": self.sparse_output},
            "columns": [str(c) for c in self._columns],
            "categorical": sorted(str(c) for c in self._categorical),
            "categories": {str(c): [str(v) for v in lv] for c, lv in self.categories_.items()},
            "rare": {str(c): sorted(str(v) for v in lv) for c, lv in self._rare.items()},
            "pooled": {str(c): bool(v) for c, v in self.pooled_.items()},
            "mean": {str(c): float(v) for c, v in self.mean_.items()},
            "scale": {str(c): float(v) for c, v in self.scale_.items()},
            "feature_names_out": [str(n) for n in self.feature_names_out_],
            "sparse": bool(self._sparse),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "CovariateEncoder":
        """Rebuild a fitted encoder from :meth:`to_dict` output."""
        enc = cls(**data["params"])
        enc._columns = list(data["columns"])
        enc._categorical = set(data["categorical"])
        enc.categories_ = {c: np.array(v, dtype=object) for c, v in data["categories"].items()}
        enc._rare = {c: set(v) for c, v in data["rare"].items()}
        enc.pooled_ = dict(data["pooled"])
        enc.mean_ = dict(data["mean"])
        enc.scale_ = dict(data["scale"])
        enc.feature_names_in_ = np.array(enc._columns, dtype=object)
        enc.n_features_in_ = len(enc._columns)
        enc.feature_names_out_ = np.array(data["feature_names_out"], dtype=object)
        enc.n_features_out_ = len(enc.feature_names_out_)
        enc._sparse = bool(data["sparse"])
        return enc
