"""Experiments on real data (paper section 4); run as ``python -m experiments.<name>``."""
