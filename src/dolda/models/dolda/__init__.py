"""DOLDA (``estimator.py``) and the stages of its fit, in the order ``DOLDA.fit`` calls
them: ``params`` (the checked parameters), ``design_stage`` (texts, covariates, labels,
word features -> the chain's design), ``chain_stage`` (running the chains, checkpoints;
``extend``: a finished chain run longer) or ``two_step`` (LDA, then DOProbit), ``summary`` (pooled
draws, the calibration map, convergence), ``state`` (the fitted state, model files).
``proportions``: topic proportions and regressors under the fitted Phi (prediction and
the calibration map); ``interpret``: what a fitted DOLDA says.  No stage imports
``estimator.py``.
"""
