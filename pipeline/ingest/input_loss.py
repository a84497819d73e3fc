"""Fail closed on input loss: a scan that finds nothing, or far fewer runs than the last published scan, stops the
pipeline before anything is written, so a night with a missing, unmounted or half-synced raw folder publishes
nothing instead of empty or shrunken marts.

A deliberate shrink (logs removed on purpose) is allowed by the ingest asset's run config ``allow_shrink: true``
(``python -m pipeline run --allow-shrink``).

This check sees parsed runs only, against the last scan of this warehouse; the accepted runs a generation may
lose against the last confirmed publish, whatever the cause (sidecars, reference edits, a new warehouse), are
judged when it is published (``pipeline.io.publish_guard``).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_MAX_RUN_LOSS_SHARE = 0.2


class InputLossError(RuntimeError):
    """The raw folder lost input: empty, or fewer runs than the last scan by more than the allowed share. The
    message is one line naming the folder and the numbers."""


def check_input_loss(raw_dir: Path, files: int, runs: int, previous_runs: int | None,
                     max_loss_share: float = DEFAULT_MAX_RUN_LOSS_SHARE, allow_shrink: bool = False) -> None:
    """Refuse a scan that would publish emptiness or a large, unexplained shrink.

    Args:
        raw_dir: the folder scanned (named in the message).
        files, runs: what the scan found (``folder_rows``): files of every kind, and runs parsed from them.
        previous_runs: runs the last successful scan gave (all dates), None when there was none.
        max_loss_share: the largest share of ``previous_runs`` a scan may lose (0.2 = 20 %).
        allow_shrink: True when the user shrinks the history on purpose; an empty folder is refused even then,
            since no mart can be built from it.
    Raises:
        InputLossError: the folder holds no file at all, or ``runs < previous_runs × (1 − max_loss_share)``
            without ``allow_shrink``.
    """
    if files == 0:
        raise InputLossError(f"raw folder {raw_dir} is empty (an unmounted or unsynced volume looks like this): "
                             "nothing published, previous marts kept")
    if allow_shrink or not previous_runs or runs >= previous_runs * (1 - max_loss_share):
        return
    raise InputLossError(
        f"raw folder {raw_dir} gives {runs} runs, {previous_runs - runs} fewer than the last scan's {previous_runs} "
        f"(over {max_loss_share:.0%} lost): nothing published, previous marts kept; if the logs were removed on "
        "purpose, run again with --allow-shrink (run config allow_shrink: true)")
