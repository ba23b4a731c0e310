"""From a trained :class:`~codesign.nn.hardware.HardwareStack` in memory to a checked bundle.

:func:`prepare_qat` puts the export's grids on a model for quantization-aware training,
:func:`export` quantizes it (:func:`codesign.quant.stack.quantize_stack`), proves the quantized
torch model and the golden model agree on the data given, and records the accuracy, the class
names and the input scaling; :class:`Bundle` runs it (golden model, deployed torch model, the
host's input preparation) and saves it; :func:`load` reads one back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from pydantic import ValidationError

from codesign import __version__
from codesign.bundle import io as bundle_io
from codesign.bundle.host import LABELS_KEY, SCALING_KEY, InputScaling, host_labels, host_scaling
from codesign.errors import CodesignError

__all__ = ["Bundle", "export", "fit_scaling", "load", "prepare_qat"]

ArrayLike = np.ndarray | torch.Tensor | Sequence


def _formats(formats: object):
    """``formats`` (a dict of the recipe's ``quant`` section, a ``QuantSpec`` or None) validated."""
    from codesign.bundle.io import validation_message
    from codesign.train.recipe import QuantSpec

    if isinstance(formats, QuantSpec):
        return formats
    if formats is not None and not isinstance(formats, dict):
        raise CodesignError(
            f"formats must be a dict like the recipe's quant section (input, layer, layers, readout), "
            f"got {type(formats).__name__}"
        )
    try:
        return QuantSpec.model_validate(formats or {})
    except ValidationError as err:
        raise CodesignError(f"formats: {validation_message(err)}") from None


def prepare_qat(model: torch.nn.Module, formats: dict | None = None) -> torch.nn.Module:
    """Fake-quantize ``model`` in place on the grids :func:`export` uses; returns it.

    ``formats`` is the recipe's ``quant`` section as a dict (``{"input": {"bits", "frac"},
    "layer": {"weight_bits", "alpha_bits", ...}}``; defaults where silent). Train the returned
    model as usual, then hand it to :func:`export` as it is: it exports with these formats unless
    given others.
    """
    from codesign.quant.export import check_deployable
    from codesign.quant.qat import add_fake_quant

    q = _formats(formats)
    if q.layers is not None and any(f != q.layers[0] for f in q.layers):
        raise CodesignError(
            "prepare_qat takes one layer format (formats.layer); per-layer formats (formats.layers) "
            "differ, which only export applies"
        )
    layer = q.layers[0] if q.layers else q.layer
    model.codesign_formats = q.model_dump()  # what export uses when it is given no formats
    return add_fake_quant(
        check_deployable(model),
        layer.weight_bits,
        layer.alpha_bits,
        q.input.frac,
        q.input.bits,
        layer.dcls_weight_bits,
        layer.bias_bits,
        layer.gate_bits,
        layer.state_bits,
    )


def as_floats(x: ArrayLike, size: int, what: str) -> np.ndarray:
    """``x`` as a float64 array ``(sequences, steps, size)``, or a one-line error naming ``what``."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise CodesignError(f"{what}: not an array of numbers ({err})") from None
    if arr.ndim != 3 or arr.shape[-1] != size or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise CodesignError(f"{what}: expected shape (sequences, steps, {size}), got {tuple(arr.shape)}")
    return arr


def as_labels(y: ArrayLike, sequences: int, what: str = "labels") -> np.ndarray:
    """Integer class labels ``(N,)`` or per step ``(N, T)`` (``-100`` ignored), checked against ``N``."""
    if isinstance(y, torch.Tensor):
        y = y.detach().cpu().numpy()
    arr = np.asarray(y)
    if arr.dtype.kind not in "iu" or arr.ndim not in (1, 2):
        raise CodesignError(
            f"{what}: expected integer class indices of shape (sequences,) or (sequences, steps), "
            f"got {arr.dtype} {tuple(arr.shape)}"
        )
    if len(arr) != sequences:
        raise CodesignError(f"{what}: {len(arr)} labels for {sequences} sequences")
    return arr.astype(np.int64)


def fit_scaling(raw: ArrayLike, mode: str = "channel") -> dict:
    """The input scaling of training recordings ``(N, T, M)`` as :func:`export` stores it.

    ``channel``: the mean and standard deviation of every channel over all recordings and steps
    (NaN ignored; a constant channel gets 1), as the file tasks standardise; ``series`` and
    ``none`` store no numbers (each recording is scaled by its own moments, or kept).
    """
    if mode not in ("channel", "series", "none"):
        raise CodesignError(f"fit_scaling: mode must be one of channel, series, none, got {mode!r}")
    if mode != "channel":
        return {"mode": mode}
    arr = np.asarray(raw.detach().cpu().numpy() if isinstance(raw, torch.Tensor) else raw, dtype=np.float64)
    if arr.ndim != 3:
        raise CodesignError(f"fit_scaling: expected shape (sequences, steps, channels), got {arr.shape}")
    flat = arr.reshape(-1, arr.shape[-1])
    mean, std = np.nanmean(flat, axis=0), np.nanstd(flat, axis=0)
    std[~(std > 0)] = 1.0
    return {"mode": "channel", "mean": mean.tolist(), "std": std.tolist()}


@dataclass(frozen=True)
class Bundle(bundle_io.Bundle):
    """A validated bundle (manifest and integer weights) with what a user runs on it.

    Every function that takes a :class:`codesign.bundle.io.Bundle` takes this one too.
    """

    @property
    def labels(self) -> list[str] | None:
        """The class names stored in the bundle (``provenance.labels``), or None."""
        return host_labels(self.manifest)

    @property
    def scaling(self) -> InputScaling | None:
        """The input scaling stored in the bundle (``provenance.input_scaling``), or None."""
        return host_scaling(self.manifest)

    @property
    def provenance(self) -> dict:
        """How the bundle was made: accuracies, mismatches, labels, scaling, codesign version."""
        return dict(self.manifest.provenance or {})

    def integer_inputs(self, x: ArrayLike, what: str = "inputs") -> np.ndarray:
        """``x`` on the input grid: integer arrays are taken as quantized, floats are quantized."""
        from codesign.golden.model import check_integer_inputs, quantize_inputs

        raw = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
        floats = None if raw.dtype.kind in "iu" else as_floats(raw, self.manifest.input.size, what)
        try:
            if floats is None:
                return check_integer_inputs(self, raw.astype(np.int64))
            return quantize_inputs(self, floats)
        except CodesignError as err:
            raise CodesignError(f"{what}: {err}") from None

    def golden(self, x: ArrayLike):
        """The golden integer model on ``x`` (floats as the model takes them, or integers):
        a :class:`codesign.golden.model.GoldenResult` (``logits``, ``classes``, ``states``, ...)."""
        from codesign.golden.model import run_golden

        return run_golden(self, self.integer_inputs(x))

    def torch(self) -> torch.nn.Module:
        """The deployed integer model as a float64 torch module
        (:class:`codesign.quant.stack.DeployedStack`; ``integer_logits(x)`` gives the golden logits)."""
        from codesign.quant.stack import deployed_from_bundle

        return deployed_from_bundle(self)

    def prepare(self, raw: ArrayLike) -> np.ndarray:
        """Raw recordings ``(N, T, M)`` scaled as stored and quantized: the integers the chip reads."""
        from codesign.data.series import standardise

        scaling = self.scaling
        if scaling is None:
            raise CodesignError(
                f"bundle '{self.manifest.name}' stores no input scaling (provenance.{SCALING_KEY}): "
                "export it with scaling=..., or quantize model-ready inputs with integer_inputs()"
            )
        x = as_floats(raw, self.manifest.input.size, "raw")
        return self.integer_inputs(standardise(x, scaling.mode, scaling.mean, scaling.std))

    def class_names(self, classes: ArrayLike) -> np.ndarray:
        """Class indices as the stored class names (indices as strings when none are stored)."""
        names = self.labels or [str(i) for i in range(self.manifest.readout.classes)]
        return np.asarray(names, dtype=object)[np.asarray(classes, dtype=np.int64)]

    def save(self, path: str | Path) -> Bundle:
        """Write the bundle directory atomically; returns the bundle as saved (its ``path`` set)."""
        saved = bundle_io.save_bundle(path, self.manifest, self.weights)
        return Bundle(saved.manifest, saved.weights, saved.path)


def load(path: str | Path) -> Bundle | bundle_io.FeatureBundle:
    """Read and validate a bundle directory (any readable format version).

    A random-feature network (``kind: features``) loads as a
    :class:`codesign.bundle.io.FeatureBundle` (its golden model:
    :func:`codesign.golden.features.run_features`); the other calls take recurrent bundles.
    """
    b = bundle_io.load_any_bundle(path)
    if isinstance(b, bundle_io.FeatureBundle):
        return b
    return Bundle(b.manifest, b.weights, b.path)


def as_bundle(bundle: object) -> Bundle:
    """A :class:`Bundle` from a bundle, a :class:`codesign.bundle.io.Bundle` or a directory."""
    if isinstance(bundle, Bundle):
        return bundle
    if isinstance(bundle, bundle_io.Bundle):
        return Bundle(bundle.manifest, bundle.weights, bundle.path)
    if isinstance(bundle, str | Path):
        bundle = load(bundle)
        if isinstance(bundle, Bundle):
            return bundle
    if isinstance(bundle, bundle_io.FeatureBundle):
        raise CodesignError(
            "a random-feature network (kind: features) has no accelerator build here: "
            "codesign.map and Build take recurrent bundles"
        )
    raise CodesignError(f"expected a bundle or a bundle directory, got {type(bundle).__name__}")


def _plain_copy(model: torch.nn.Module):
    """A CPU copy of ``model`` without fake quantization (its quantized values baked in)."""
    from codesign.nn.hardware import HardwareStack
    from codesign.train.trainer import plain_state

    plain = HardwareStack(
        model.cells[0].input_size,
        model.readout.out_features,
        model.layer_specs,
        pooling=model.pooling,
        per_step=model.per_step,
        readout_hidden=model.readout_hidden,
        readout_act=model.readout_act,
        input_stride=model.stride.stride,
    )
    plain.load_state_dict({k: v.detach().cpu() for k, v in plain_state(model).items()})
    for mine, theirs in zip(plain.cells, model.cells, strict=True):
        if hasattr(theirs, "eps"):
            mine.eps = theirs.eps
    return plain.eval()


@torch.no_grad()
def _float_accuracy(model: torch.nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """The given model's accuracy on ``x`` (on its own device and dtype), labels ``-100`` ignored."""
    param = next(model.parameters())
    was = model.training
    model.eval()
    try:
        logits = model(torch.from_numpy(x).to(param.device, param.dtype)).cpu().numpy()
    finally:
        model.train(was)
    pred = logits.argmax(-1)
    mask = y != -100
    return float((pred[mask] == y[mask]).mean()) if mask.any() else 0.0


def _check(bundle: bundle_io.Bundle, model, x: np.ndarray, y: np.ndarray | None) -> dict:
    """Quantized torch == golden on ``x`` (else an AssertionError: a bug), and the accuracies."""
    from codesign.golden.model import quantize_inputs, run_golden
    from codesign.quant.stack import deployed_from_bundle

    golden = run_golden(bundle, quantize_inputs(bundle, x))
    torch_logits = deployed_from_bundle(bundle).integer_logits(torch.from_numpy(x))
    mismatches = int((torch_logits != golden.logits).reshape(len(x), -1).any(axis=1).sum())
    if mismatches:
        raise AssertionError(f"quantized torch and golden disagree on {mismatches} sequences: a bug")
    out: dict = {
        "torch_vs_golden_mismatches": mismatches,
        "test_sequences": len(x),
        "events_per_step": float(np.mean(golden.events)),
    }
    if y is not None:
        mask = y != -100
        out["float_test_accuracy"] = _float_accuracy(model, x, y)
        out["quantized_test_accuracy"] = (
            float((golden.classes[mask] == y[mask]).mean()) if mask.any() else 0.0
        )
    return out


def export(
    model: torch.nn.Module,
    calibration: ArrayLike,
    *,
    formats: dict | None = None,
    name: str = "model",
    labels: Sequence[str] | None = None,
    scaling: dict | str | None = None,
    check: tuple[ArrayLike, ArrayLike | None] | None = None,
) -> Bundle:
    """Quantize a trained hardware stack into a bundle, checked against the golden model.

    Parameters
    ----------
    model
        A :class:`~codesign.nn.hardware.HardwareStack` (plain, or prepared with :func:`prepare_qat`),
        on any device; it is left as it is.
    calibration
        Inputs ``(N, T, M)`` as the model takes them; they set the state grids.
    formats
        The recipe's ``quant`` section as a dict (default: those of :func:`prepare_qat` for a model
        it prepared, else 8-bit inputs with 4 fraction bits, 8-bit weights, 16-bit states).
    name
        The bundle's name.
    labels
        Class names, one per readout class, stored as ``provenance.labels``.
    scaling
        What a host applies to raw recordings before quantization, stored as
        ``provenance.input_scaling``: ``"none"``, ``"series"`` or a dict from :func:`fit_scaling`.
    check
        ``(x, y)``: the quantized torch model must equal the golden model on ``x`` bit for bit (an
        ``AssertionError`` otherwise); with labels ``y`` the float and golden accuracies are stored.
        ``y`` may be None.

    Returns
    -------
    Bundle
        In memory (``path`` None); :meth:`Bundle.save` writes it.
    """
    from codesign.bundle.reorder import reorder_selective
    from codesign.quant.export import _selective_report, check_deployable
    from codesign.quant.stack import quantize_stack

    check_deployable(model)
    q = _formats(formats if formats is not None else getattr(model, "codesign_formats", None))
    plain = _plain_copy(model)
    size = plain.cells[0].input_size
    calib = as_floats(calibration, size, "calibration")
    manifest, weights = quantize_stack(
        plain,
        name=name,
        input_bits=q.input.bits,
        input_frac=q.input.frac,
        layer_formats=q.layer_formats(len(plain.cells)),
        readout_formats=q.readout.model_dump(),
        calibration=torch.from_numpy(calib),
    )
    bundle, orders = reorder_selective(bundle_io.Bundle(manifest, bundle_io.check_weights(manifest, weights)))
    prov: dict = {"source": "codesign.export", "calibration_sequences": len(calib)}
    if check is not None:
        x = as_floats(check[0], size, "check inputs")
        y = None if check[1] is None else as_labels(check[1], len(x), "check labels")
        prov |= _check(bundle, model, x, y)
        if orders:
            from codesign.golden.model import quantize_inputs, run_golden

            prov |= _selective_report(bundle, run_golden(bundle, quantize_inputs(bundle, x)), orders)
    if labels is not None:
        prov[LABELS_KEY] = list(labels) if not isinstance(labels, str) else labels
    if scaling is not None:
        prov[SCALING_KEY] = {"mode": scaling} if isinstance(scaling, str) else dict(scaling)
    prov["codesign_version"] = __version__
    final = bundle.manifest.model_copy(update={"provenance": prov})
    from codesign.bundle.host import check_host

    check_host(final)
    return Bundle(final, bundle.weights)
