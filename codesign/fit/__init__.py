"""``codesign fit DATA_TRAIN DATA_TEST``: the most accurate deployable network that fits a chip.

A small space of deployable networks (``codesign/fit/space.yaml``, :mod:`codesign.fit.space`) is
cross-validated on the user's training file (:mod:`codesign.fit.search`, on Dask), each candidate
is mapped onto the chip at the step rate (:mod:`codesign.fit.stages`), and the most accurate one
that fits is refitted on the whole file, exported and scored on the test file
(:mod:`codesign.fit.run`).
"""

from codesign.fit.run import FitOptions, fit

__all__ = ["FitOptions", "fit"]
