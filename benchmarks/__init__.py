"""Benchmarks of dolda, run as ``python -m benchmarks.NAME`` on :mod:`benchmarks.harness`."""
