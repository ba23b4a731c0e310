#!/usr/bin/env bash
# Re-run the suRNN copying-memory (delay 1000) and mGRADE flip-flop (L = 512) claims on one GPU with
# `codesign train --device cuda`, each sized to about 4 minutes of an H100 (scripts/gpu/rerun.py says
# how); one JSON per result in $OUT (else runs/gpu_rerun) as each finishes.
#
#   scripts/gpu/rerun.sh                      # on the GPU machine, from anywhere in the checkout
#   RERUN_TINY=1 scripts/gpu/rerun.sh         # the same end to end on a CPU, tiny tasks, seconds
#   RERUN_TRAIN_S=120 RERUN_JOBS=flip_flop_mgrade scripts/gpu/rerun.sh
#
# The machine needs a CUDA build of torch plus the package's light dependencies (pydantic, typer,
# rich, pyyaml, numpy). Where pydantic is missing and nothing can be installed from the network,
# carry wheels for the machine's Python in .whl/ (docs/gpu.md gives the pip download line); they are
# installed into /tmp/site here.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import pydantic, typer, rich, yaml, numpy" 2>/dev/null; then
    if compgen -G ".whl/*.whl" >/dev/null; then
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
        export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    else
        echo "error: $PY lacks one of pydantic, typer, rich, pyyaml, numpy; pip install them, or carry their wheels in .whl/ (docs/gpu.md)" >&2
        exit 2
    fi
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
exec "$PY" scripts/gpu/rerun.py "$@"
