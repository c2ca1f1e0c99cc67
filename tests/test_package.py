"""The package's lazy public names."""

import subprocess
import sys

import dolda


def test_every_public_name_resolves():
    for name in dolda.__all__:
        assert getattr(dolda, name) is not None, name
    assert dolda.coherence.topic_coherence is not None and dolda.DOLDA.__name__ == "DOLDA"


def test_import_dolda_compiles_and_imports_nothing_heavy():
    code = ("import sys, dolda; heavy = [m for m in ('numba', 'sklearn', 'pandas', 'pyarrow', "
            "'scipy.stats', 'scipy.sparse') if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_estimators_import_leaves_out_what_a_fit_does_not_need():
    """``from dolda import DOLDA`` needs numba, scikit-learn (and what it imports), not the
    Dask backend, plotting or the ArviZ export: their modules (tens of MB resident) load
    only when used."""
    code = ("import sys; from dolda import DOLDA, DOProbit; heavy = [m for m in ('dask', "
            "'distributed', 'matplotlib', 'arviz', 'tqdm') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
