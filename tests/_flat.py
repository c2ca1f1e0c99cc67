"""A DOLDA built from options named by their flat names (as model files and the CLI name them),
for tests that vary the sampler's options through one dict."""

from dolda import DOLDA
from dolda.models.dolda.options import from_flat


def flat_dolda(n_topics=None, **flat):
    """``DOLDA`` of the flat options ``flat`` (``two_step=True``: a TwoStepDOLDA)."""
    if n_topics is not None:
        flat["n_topics"] = n_topics
    return from_flat(DOLDA, flat)
