"""DOProbit (``estimator.py``) and its Gibbs chain (``chain.py``).
"""
