"""Fitted attributes of an unfitted estimator raise scikit-learn's ``NotFittedError``.

scikit-learn's convention: ``DOLDA().coef_`` raises
:class:`sklearn.exceptions.NotFittedError` (a subclass of ``AttributeError``, so
``hasattr`` stays False) telling the caller to call ``fit``; a plain
``AttributeError: 'DOLDA' object has no attribute 'coef_'`` reads like a typo or
a bug.  A fitted estimator's unknown attribute is still a plain ``AttributeError``.
"""

from __future__ import annotations

from sklearn.exceptions import NotFittedError

__all__ = ["NotFittedAttributes", "not_fitted_error"]


def not_fitted_error(estimator, name: str | None = None) -> NotFittedError:
    """The error for reading ``name`` (or using ``estimator``) before ``fit``."""
    what = f"{name} is" if name else "this is"
    return NotFittedError(
        f"This {type(estimator).__name__} instance is not fitted yet ({what} set by fit). "
        "Call 'fit' with appropriate arguments before using this estimator.")


def _is_fitted(estimator) -> bool:
    try:
        state = object.__getattribute__(estimator, "__dict__")
    except AttributeError:
        return False
    return any(k.endswith("_") and not k.startswith("__") for k in state)


class NotFittedAttributes:
    """Mixin: a missing public attribute ending in ``_`` of an unfitted estimator (its
    fitted attributes, and the properties computed from them) raises ``NotFittedError``."""

    def __getattr__(self, name):
        # only called when normal lookup failed (a property that raised AttributeError too)
        if name.endswith("_") and not name.startswith("_") and not _is_fitted(self):
            raise not_fitted_error(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
