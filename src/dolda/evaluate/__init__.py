"""Judging a fitted chain: convergence verdict, diagnostics and ArviZ export,
held-out likelihood and perplexity.
"""
