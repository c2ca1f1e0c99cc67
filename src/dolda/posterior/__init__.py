"""What the kept draws become during a fit: the DO-probit scores and the
calibration map (``scores``, ``calibration``), fitted on leave-one-out draws,
on held-out rows (``holdout``) or on cross-fitted chains (``crossfit``).
"""
