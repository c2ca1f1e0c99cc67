"""From the user's ``X`` to the arrays a chain reads: texts and tables split
(``estimator_input``), the corpus and vocabulary, the covariate encoder, words as
covariates, and the regressor rows ``[1, x, words, zbar]`` (``regressors``).
"""
