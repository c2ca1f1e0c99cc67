"""Helpers below every estimator: input checks, class labels, stored draws, heap
release.
"""
