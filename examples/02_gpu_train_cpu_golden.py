"""A model trained on ``cuda`` when one is present (the CPU otherwise), exported, and run on the
CPU's golden integer model; then mapped onto the UP5K (Verilog, no simulator needed).

    python examples/02_gpu_train_cpu_golden.py      # OUT=runs/example_02
    SMALL=1 python examples/02_gpu_train_cpu_golden.py

Needs only the core install (``pip install codesign``): this is the example the clean-install
test runs.
"""

import os
from pathlib import Path

import torch

import codesign
from codesign.nn.hardware import HardwareStack

SMALL = os.environ.get("SMALL") == "1"
OUT = Path(os.environ.get("OUT", "runs/example_02"))
device = "cuda" if torch.cuda.is_available() else "cpu"

# copy the first input: 3 symbols one-hot at step 0, silence after; the class is the symbol
steps, iterations = (8, 80) if SMALL else (20, 300)
gen = torch.Generator().manual_seed(0)


def sample(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.randint(0, 3, (n,), generator=gen)
    x = torch.zeros(n, steps, 3)
    x[torch.arange(n), 0, y] = 1.0
    return x, y


x_train, y_train = sample(512)
x_test, y_test = sample(128)
torch.manual_seed(0)
model = HardwareStack(3, 3, [{"cell": "cmru", "size": 4, "eps": 1.0}]).to(device)
opt = torch.optim.Adam(model.parameters(), lr=2e-2)
for _ in range(iterations):
    i = torch.randint(0, len(x_train), (64,), generator=gen)
    loss = torch.nn.functional.cross_entropy(model(x_train[i].to(device)), y_train[i].to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()

bundle = codesign.export(
    model, x_train[:128], check=(x_test, y_test), labels=["a", "b", "c"], name="copy_first"
)
golden = bundle.golden(x_test)  # numpy integers on the CPU
accuracy = float((golden.classes == y_test.numpy()).mean())
build = codesign.map(bundle.save(OUT / "bundle"), device="up5k", inputs=x_test[:1], out=OUT / "build")
print(f"trained on {device}; float {bundle.provenance['float_test_accuracy']:.3f}, golden {accuracy:.3f}")
print(f"{build}: {build.verilog}")
assert accuracy == bundle.provenance["quantized_test_accuracy"]
assert bundle.provenance["torch_vs_golden_mismatches"] == 0 and build.verilog.is_file()
