"""A quantisation sweep in Python: one trained model exported at several weight widths, the golden
accuracy and the weight memory of each in a pandas table and a matplotlib plot.

    python examples/03_quant_sweep.py               # OUT=runs/example_03
    SMALL=1 python examples/03_quant_sweep.py
"""

import os
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import torch

import codesign
from codesign.bundle.spec import array_table
from codesign.nn.hardware import HardwareStack

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend

SMALL = os.environ.get("SMALL") == "1"
OUT = Path(os.environ.get("OUT", "runs/example_03"))
OUT.mkdir(parents=True, exist_ok=True)

# the sign of a running sum: the class says whether the first half of a noisy sequence sums above 0
steps, iterations = (12, 60) if SMALL else (32, 400)
gen = torch.Generator().manual_seed(0)
x = torch.randn(768, steps, 2, generator=gen)
y = (x[:, : steps // 2, 0].sum(1) > 0).long()
x_train, y_train, x_test, y_test = x[:512], y[:512], x[512:], y[512:]
torch.manual_seed(0)
model = HardwareStack(2, 2, [{"cell": "mingru", "size": 8}])
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _ in range(iterations):
    i = torch.randint(0, 512, (64,), generator=gen)
    loss = torch.nn.functional.cross_entropy(model(x_train[i]), y_train[i])
    opt.zero_grad()
    loss.backward()
    opt.step()

rows = []
for bits in (3, 4, 6, 8):
    formats = {"layer": {"weight_bits": bits}, "readout": {"weight_bits": bits}}
    bundle = codesign.export(model, x_train[:128], formats=formats, check=(x_test, y_test))
    table = array_table(bundle.manifest)  # {array: (shape, bits)}
    rows.append(
        {
            "weight_bits": bits,
            "float_accuracy": bundle.provenance["float_test_accuracy"],
            "golden_accuracy": bundle.provenance["quantized_test_accuracy"],
            "parameter_bits": int(sum(np.prod(shape) * b for shape, b in table.values())),
        }
    )
frame = pd.DataFrame(rows)
print(frame.to_string(index=False))

fig, ax = plt.subplots(figsize=(5, 3.2))
ax.plot(frame["parameter_bits"], frame["golden_accuracy"], "o-", label="golden (integer)")
ax.axhline(frame["float_accuracy"].iloc[0], ls="--", color="gray", label="float")
for _, r in frame.iterrows():
    ax.annotate(
        f"{r['weight_bits']} b",
        (r["parameter_bits"], r["golden_accuracy"]),
        xytext=(4, -10),
        textcoords="offset points",
    )
ax.set_xlabel("parameter memory (bits)")
ax.set_ylabel("test accuracy")
ax.legend()
fig.tight_layout()
fig.savefig(OUT / "sweep.png", dpi=110)
frame.to_csv(OUT / "sweep.csv", index=False)
print(f"plot {OUT / 'sweep.png'}")
assert frame["golden_accuracy"].between(0, 1).all() and frame["parameter_bits"].is_monotonic_increasing
