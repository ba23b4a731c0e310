"""codesign: from a recurrent model recipe to bit-exact RTL, golden model and analog netlists.

The Python API (:mod:`codesign.api`) is reachable from here: ``codesign.export``,
``codesign.load``, ``codesign.map``, ``codesign.prepare_qat``, ``codesign.fit_scaling`` and the
result types. They are imported on first use, so ``import codesign`` does not import torch.
"""

__version__ = "0.1.0"

_API = ("Build", "Bundle", "Report", "SimResult", "export", "fit_scaling", "load", "map", "prepare_qat")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from codesign import api

        return getattr(api, name)
    raise AttributeError(f"module 'codesign' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
