"""The Dask cluster every batch of the package runs on: a local cluster by default, or an existing one.

Design-space exploration (:mod:`codesign.explore`), the FPGA batch (:mod:`codesign.fpga.batch`)
and the analog evaluation (:mod:`codesign.analog.evaluate`) all hand their tasks to the client this
module opens. It sits below all of them and imports nothing of theirs, so each can use it without
reaching into another's package. Nothing in a task depends on the cluster: ``--scheduler ADDRESS``
sends the same functions and dicts to an existing cluster (whose workers must share the
filesystem the tasks write to).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from codesign.errors import CodesignError

__all__ = ["GPU", "dask_client"]

GPU = {"GPU": 1}
"""The Dask worker resource of a GPU, which the tasks that train ask for when training goes there."""


def _local_gpu_cluster(n: int) -> Any:
    """``n`` one-thread CPU workers and one more that holds the resource ``GPU: 1``."""
    from codesign.extras import require

    require("distributed", "a Dask cluster")
    from distributed import Nanny, Scheduler, SpecCluster

    options = {"nthreads": 1, "silence_logs": logging.ERROR, "dashboard": False, "dashboard_address": None}
    workers: dict[str, dict[str, Any]] = {f"cpu-{i}": {"cls": Nanny, "options": options} for i in range(n)}
    workers["gpu"] = {"cls": Nanny, "options": options | {"resources": GPU}}
    # the scheduler's HTTP server on a free port: no clash with another cluster's 8787
    scheduler = {"cls": Scheduler, "options": {"dashboard": False, "dashboard_address": ":0"}}
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=logging.ERROR)


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int | None, gpu: bool = False) -> Iterator[Any]:
    """A client of the cluster at ``scheduler``, or of a new local one (``workers`` x 1 thread, and
    with ``gpu`` one worker more holding the resource ``GPU: 1``)."""
    from codesign.extras import require

    require("distributed", "a Dask cluster")
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as err:
            raise CodesignError(f"--scheduler {scheduler}: cannot connect ({err})") from None
        with client:
            yield client
        return
    n = workers or os.cpu_count() or 1
    if gpu:
        with _local_gpu_cluster(n) as cluster, Client(cluster) as client:
            yield client
        return
    # one thread per worker process: torch does not oversubscribe (the stages also set it to 1)
    cluster = LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    with cluster, Client(cluster) as client:
        yield client
