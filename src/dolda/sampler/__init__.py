"""The MCMC machinery: chain states, Gibbs blocks and their numba kernels.

Only this package imports numba.  Estimators call the functions here with
plain arrays and never see a kernel.
"""
