#!/usr/bin/env bash
# GPU checks of the Triton scans, for a machine with a CUDA device (about 6 minutes on one H100):
#   1. the environment (torch, triton, device) -> $OUT/env.json
#   2. tests/test_gpu_scan.py compiled on the GPU, cuda-marked tests included
#      -> $OUT/tests.log, $OUT/tests.xml, $OUT/tests_rc.txt
#   3. codesign bench scan --device cuda -> $OUT/bench_scan.json (rewritten after every section)
# Run from anywhere: OUT=/some/dir scripts/gpu/run.sh (default OUT: ./gpu-out). No network needed.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
unset TRITON_INTERPRET CODESIGN_SCAN_BACKEND

"$PY" - > "$OUT/env.json" <<'PYEOF'
import importlib.util, json, platform, torch
info = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.cuda.is_available(),
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
for name in ("triton", "pytest", "hypothesis", "typer", "rich", "accelerated_scan"):
    info[name] = importlib.util.find_spec(name) is not None
if info["triton"]:
    import triton
    info["triton_version"] = triton.__version__
print(json.dumps(info, indent=1))
PYEOF
cat "$OUT/env.json"

if "$PY" -c "import pytest, hypothesis" 2>/dev/null; then
    timeout 200 "$PY" -m pytest -q -p no:cacheprovider tests/test_gpu_scan.py -rs \
        --junitxml="$OUT/tests.xml" > "$OUT/tests.log" 2>&1
    echo $? > "$OUT/tests_rc.txt"
    tail -5 "$OUT/tests.log"
else
    echo "pytest or hypothesis is not installed: tests not run" | tee "$OUT/tests.log"
    echo "missing" > "$OUT/tests_rc.txt"
fi

if "$PY" -c "import typer, rich" 2>/dev/null; then
    timeout 300 "$PY" -m codesign bench scan --device cuda --json "$OUT/bench_scan.json" > "$OUT/bench.log" 2>&1
else
    timeout 300 "$PY" scripts/gpu/bench_scan.py "$OUT/bench_scan.json" > "$OUT/bench.log" 2>&1
fi
echo $? > "$OUT/bench_rc.txt"
tail -3 "$OUT/bench.log"
echo "tests rc $(cat "$OUT/tests_rc.txt"), bench rc $(cat "$OUT/bench_rc.txt"); figures in $OUT"
