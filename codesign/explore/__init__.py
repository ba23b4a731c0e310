"""Design-space exploration (``codesign explore SPACE.yaml --out DIR``) on Dask distributed.

A space file (:mod:`codesign.explore.space`) spans networks, quantization and lanes; each trial
(:mod:`codesign.explore.trial`) is a plain function of a configuration dict, run on a Dask cluster
(:mod:`codesign.explore.runner`), written atomically to ``DIR/trials/<hash>.json`` and assembled
into a table, plots and a summary (:mod:`codesign.explore.results`). Hardware figures come from
one replaceable function, :func:`codesign.explore.hardware.hardware_figures`.
"""

from codesign.explore.space import Space, load_space

__all__ = ["Space", "load_space"]
