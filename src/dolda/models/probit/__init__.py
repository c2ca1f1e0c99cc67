"""DOProbit (``estimator.py``) and its Gibbs chain (``probit_chain.py``).
"""
