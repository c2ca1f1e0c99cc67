"""Hypothesis profiles: the suite is reproducible by default, exploration is opt-in.

* ``default`` (what ``python -m pytest`` and CI run): ``derandomize=True``, so every run
  draws the same examples and a failure is the code's, not the seed's.
* ``explore`` (``HYPOTHESIS_PROFILE=explore python -m pytest -m bad_input``):
  new random examples on every run (each test keeps its own ``max_examples``); a failure
  prints the example and its reproduction blob.  The model-file fuzz test found the
  covariate_columns case this way; run it a few times after touching a loader.
"""

import os

from hypothesis import settings

settings.register_profile("default", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# No compile helper beside the suite's CLI runs (dolda.cli._compile_ahead): the suite's
# workers already keep both cores busy; tests/cli/test_compile_ahead.py switches it on itself.
os.environ.setdefault("DOLDA_COMPILE_AHEAD", "0")
