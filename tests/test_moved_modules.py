"""The flat layout's module paths (before issue 35) import the moved modules."""

import importlib

import pytest

import dolda


@pytest.mark.parametrize("old", sorted(dolda._MOVED))
def test_an_old_module_path_is_the_moved_module(old):
    moved = importlib.import_module(dolda._MOVED[old])
    assert importlib.import_module(old) is moved
    assert moved.__spec__.name == dolda._MOVED[old]  # the alias leaves the module's own spec


def test_old_class_paths_resolve_to_the_estimators():
    from dolda.model import DOLDA
    from dolda.probit import DOProbit

    assert DOLDA is dolda.DOLDA and DOProbit is dolda.DOProbit
