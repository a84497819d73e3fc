"""The interpreter's heap during a run: what the cyclic garbage collector looks at."""

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Within the block, the cyclic garbage collector leaves alone every object that existed when it began
    (``gc.freeze``; ``gc.unfreeze`` on leaving, however the block ends).

    Why: a run's steps build many short-lived Python objects (series points, rows), and each such burst starts
    the collector's full passes, which walk every tracked object: most of them the modules, definitions and
    instance loaded before the run (Dagster, pyarrow, DuckDB, the pipeline's own), which live as long as the
    process and hold no garbage. Frozen, those are skipped; what the run itself creates is collected as before.
    Reference counting frees objects as always, frozen or not.

    A heap that is frozen already (an outer block, or a process that froze its own) is left as it is, and stays
    frozen after the block: thawing it would end the outer freeze.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
