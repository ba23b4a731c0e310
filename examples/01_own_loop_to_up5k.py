"""Your own training loop on your own tensors, to a UP5K build simulated bit-exact, with its report.

    python examples/01_own_loop_to_up5k.py          # OUT=runs/example_01, Verilator
    SMALL=1 CODESIGN_SIM=icarus python examples/01_own_loop_to_up5k.py

The data are recordings in raw units (two classes of noisy waves around a sensor's offset). The
input scaling fitted on the training recordings travels in the bundle, so the host prepares raw
recordings exactly as training did (``bundle.prepare``).
"""

import os
from pathlib import Path

import numpy as np
import torch

import codesign
from codesign.nn.hardware import HardwareStack

SMALL = os.environ.get("SMALL") == "1"
SIM = os.environ.get("CODESIGN_SIM", "verilator")
OUT = Path(os.environ.get("OUT", "runs/example_01"))
STEPS, ITERATIONS, SIZE = (12, 30, 4) if SMALL else (48, 400, 8)


def recordings(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``n`` raw recordings ``(n, STEPS, 1)`` around 3.3 V: class 0 a sine, class 1 a square wave."""
    y = rng.integers(0, 2, n)
    t = np.arange(STEPS)[None, :] * rng.uniform(0.2, 0.5, (n, 1)) + rng.uniform(0, 6.3, (n, 1))
    wave = np.where(y[:, None] == 0, np.sin(t), np.sign(np.sin(t)))
    return (3.3 + 0.5 * wave + 0.1 * rng.normal(size=wave.shape))[..., None], y


rng = np.random.default_rng(0)
raw_train, y_train = recordings(256, rng)
raw_test, y_test = recordings(64, rng)

# your scaling, your model, your loop
scaling = codesign.fit_scaling(raw_train)  # per-channel mean and standard deviation
mean, std = np.asarray(scaling["mean"]), np.asarray(scaling["std"])
x_train = torch.tensor((raw_train - mean) / std, dtype=torch.float32)
x_test = torch.tensor((raw_test - mean) / std, dtype=torch.float32)
torch.manual_seed(0)
model = HardwareStack(1, 2, [{"cell": "cmru", "size": SIZE, "eps": 0.0}])
codesign.prepare_qat(model)  # train on the grids the export uses
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _ in range(ITERATIONS):
    batch = torch.from_numpy(rng.integers(0, len(x_train), 32))
    loss = torch.nn.functional.cross_entropy(model(x_train[batch]), torch.from_numpy(y_train[batch]))
    opt.zero_grad()
    loss.backward()
    opt.step()

# from the model in memory to a simulated UP5K build and its report
bundle = codesign.export(model, x_train, check=(x_test, y_test), labels=["sine", "square"], scaling=scaling)
build = codesign.map(
    bundle.save(OUT / "bundle"), device="up5k", step_rate=100, inputs=x_test[:2], out=OUT / "build"
)
n = 3 if SMALL else 16
sim = build.simulate(bundle.prepare(raw_test[:n]), y_test[:n], sim=SIM)
report = build.report(inputs=x_test[:2], lanes=[1, 2] if SMALL else None)  # lane counts compared
report.save(OUT / "report")

print(
    f"golden accuracy {bundle.provenance['quantized_test_accuracy']:.3f} (float {bundle.provenance['float_test_accuracy']:.3f})"
)
print(f"{build}: {build.mapping['reason']}")
print(f"{SIM}: bit-exact {sim.bit_exact} on {sim.sequences} sequences, {sim.cycles_per_step:.1f} cycles/step")
print(sim.to_frame().assign(name=lambda f: bundle.class_names(f["rtl_class"])).to_string(index=False))
print(
    f"energy {report.energy['energy_uj_per_inference'] * 1e3:.3f} nJ/inference; report {OUT / 'report' / 'report.md'}"
)
assert sim.bit_exact, sim.first_mismatch
