"""Options measured and not adopted as defaults, kept for studies.

``DOLDA(experimental=Experimental(word_selection="chi2"))``.  Each was compared with the default
it would replace; ``docs/decisions/`` has what was measured.  They may change or go without a
deprecation period.
"""

from .models.dolda.options import Experimental

__all__ = ["Experimental"]
