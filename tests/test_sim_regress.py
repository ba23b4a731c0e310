"""The quick tier of `make sim` (verification/regress.py --quick): three shapes that hold every cell
kind under Icarus, bit-exact with every coverage bin it can reach; and the mutation check: every
deliberate fault of the generator is caught, by a named test.

Also the minimal reproduction of an RTL bug the regression found (fixed in codesign/hw/layer.py).
"""

import json
import sys
from argparse import Namespace
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from codesign.bundle.random import make_random_network_bundle
from codesign.hw.build import build_rtl
from codesign.hw.faults import FAULTS
from codesign.verify import run_sim

VERIFICATION = Path(__file__).resolve().parents[1] / "verification"
sys.path.insert(0, str(VERIFICATION))

import regress  # noqa: E402
import regress_plan  # noqa: E402
import regress_run  # noqa: E402

pytestmark = pytest.mark.sim


def quick_args(out: Path, **kw) -> Namespace:
    args = regress.parse_args(
        ["--quick", "--sims", "icarus", "--no-long", "--no-references", "--out", str(out)]
    )
    for k, v in kw.items():
        setattr(args, k, v)
    return args


@pytest.fixture(scope="module")
def mutant_rows(tmp_path_factory):
    """Every fault built into its quick-tier design and run under Icarus, two at a time."""
    out = tmp_path_factory.mktemp("quick")
    designs = regress_plan.plan_designs(quick_args(out), out)
    mutants = regress_plan.plan_mutants(designs, out)
    with ProcessPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(regress_run._build, [regress_run.build_args(m) for m in mutants]))
    assert all(err is None for _, err in built), built
    with ThreadPoolExecutor(max_workers=2) as pool:
        rows = list(pool.map(lambda m: regress_run.run_job(m, "icarus", seed=0, timeout_s=900), mutants))
    return {row.design.faults[0]: row for row in rows}


@pytest.mark.long  # make sim runs the full regression
def test_quick_tier_is_bit_exact(tmp_path):
    code = regress.main(
        ["--quick", "--sims", "icarus", "--no-long", "--no-mutants", "--jobs", "2", "--out", str(tmp_path)]
    )
    s = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0, s["failed_jobs"]
    assert s["mismatches"] == 0 and s["designs"]["random_bundles"] == 8
    assert s["sequences"] > 50
    cov = s["coverage"]["points"]
    assert all(cov["cell"].values()), cov["cell"]  # every cell kind checked
    assert all(cov["readout"].values()), cov["readout"]
    assert (tmp_path / "junit.xml").is_file()


@pytest.mark.long
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_quick_tier_catches_mutant(mutant_rows, fault):
    row = mutant_rows[fault]
    assert row.caught_by is not None, f"{fault} escaped: {row.message}"
    print(f"{fault}: caught by {row.caught_by}: {row.message}")


def test_first_step_all_zero_after_power_up_under_icarus(tmp_path):
    """Was an RTL bug (4-state simulation): a biases-only first slot after power-up multiplied 0 by
    a never-loaded weight read register (X * 0 = X under Icarus). Biases-only slots now use 0."""
    layers = [{"cell": "cmru", "size": 2, "eps": 1, "state_bits": 4}]
    bundle = make_random_network_bundle(str(tmp_path / "b"), seed=1, inputs=2, layers=layers, classes=2)
    build_rtl(bundle.path, tmp_path / "rtl", lanes=1, weights="baked")
    x = np.zeros((1, 3, 2), dtype=np.int64)
    x[0, 1:] = 1
    np.save(tmp_path / "x.npy", x)
    report = run_sim(
        tmp_path / "rtl", sim="icarus", vectors=0, inputs=tmp_path / "x.npy", waves="never", warm_up=False
    )
    assert report.ok, report.summary_line()
