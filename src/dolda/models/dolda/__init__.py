"""DOLDA (``estimator.py``) and the stages of its fit: ``inputs`` (texts,
covariates, word features -> the chain's design), ``chain`` (running and
pooling chains, checkpoints), ``extend`` (a finished chain run longer),
``state`` (model files), ``interpret`` (what a fitted DOLDA says).
"""
