"""The estimators: DOLDA, DOProbit and LDA, each a scikit-learn face over its fit.

``models/dolda/`` holds DOLDA's fit in stages, one module each (``design_stage`` ->
the design, ``chain_stage``, the posterior summary in ``estimator``, ``state`` for model
files, ``interpret`` for what a fitted model says); ``models/probit/`` DOProbit and
its chain; ``lda.py`` the unsupervised LDA.  Nothing here imports numba: the
chains run in :mod:`dolda.backends` and :mod:`dolda.sampler`.
"""
