"""codesign as a library: a trained model in memory to a checked bundle, a mapped build, its
bit-exact simulation and its report, without recipes, task objects or run directories.

Every name is also reachable as ``codesign.NAME`` (imported on first use, so ``import codesign``
stays cheap)::

    import codesign

    bundle = codesign.export(model, x_train[:256], check=(x_test, y_test), labels=names)
    build = codesign.map(bundle, device="up5k", step_rate=100, inputs=x_test[:4])
    sim = build.simulate(x_test[:8], y_test[:8], sim="verilator")
    report = build.report(inputs=x_test[:2])

Errors a caller can fix are :class:`codesign.errors.CodesignError` with one line; nothing is
printed unless ``progress=True`` is asked for.
"""

from codesign.api.build import Build, Report, SimResult, map
from codesign.api.model import Bundle, export, fit_scaling, load, prepare_qat

__all__ = ["Build", "Bundle", "Report", "SimResult", "export", "fit_scaling", "load", "map", "prepare_qat"]
