"""``python -m pipeline overlay RAW_DIR [--out DIR] [--no-open]``: the user's own result files, checked by the
pipeline, drawn as unofficial points on the explorer page over the published marts, without writing the published
marts or the warehouse.

The folder goes through the pipeline's ingest, validate and metrics stages (``materialize_all`` with those assets:
the same parsing, validation and metric rules, the same quarantine) against a temporary warehouse and mart folder
that are deleted afterwards; its accepted runs
(``run_metrics``) and its quarantine rows are read from that temporary warehouse. The explorer page
(``pipeline.comparisons.explorer``) is built from the published ``runs/`` and ``regressions`` marts of
``PIPELINE_OUT_DIR`` (read only) with those runs as unofficial points: a marker and a legend entry of their own,
on no frontier, in no table or trend, in no mart. Quarantined files are listed on the page with their reasons.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import webbrowser
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.io.paths import pointed_at

# The stages the overlay runs on the user's folder: what reads, checks and measures runs (docs/architecture.md).
CHECKING_GROUPS = ("ingest", "validate", "metrics")


def checking_assets() -> list:
    """The asset keys of the stages that read and check a folder (``CHECKING_GROUPS``: ingest, validate,
    metrics): the overlay's run stops there (no frontier, comparison, report or publish of its own)."""
    from pipeline.definitions import defs

    return [key for assets in defs().resolve_asset_graph().assets_defs for key in assets.keys
            if assets.group_names_by_key.get(key) in CHECKING_GROUPS]


def check_folder(raw_dir: Path) -> tuple[pa.Table, list[dict]]:
    """Run ``raw_dir`` through the pipeline's checking stages (``checking_assets``) against a temporary warehouse
    and mart folder (deleted on return).

    Args:
        raw_dir: a folder of result files, sidecars and ``runs.csv`` (searched recursively, as ``PIPELINE_RAW_DIR``).
    Returns:
        (the accepted runs: the temporary warehouse's ``run_metrics`` rows, every price book, with the columns
        ``explorer.INPUT_COLUMNS`` it has; the quarantine rows: ``source_file``, ``source_row``, ``reason_code``,
        ``detail``, ``stage``, sorted by file and row).
    Raises:
        FileNotFoundError: ``raw_dir`` is not a folder.
        RuntimeError: the run stopped before the metrics (the message gives the first failed step's cause),
            e.g. a folder with no result file at all.
    """
    import dagster as dg

    from pipeline.__main__ import failure_line, materialize_all
    from pipeline.comparisons.explorer import INPUT_COLUMNS

    if not raw_dir.is_dir():
        raise FileNotFoundError(f"overlay: {raw_dir} is not a folder")
    with tempfile.TemporaryDirectory(prefix="overlay-run-") as tmp:
        db_path = Path(tmp) / "warehouse.duckdb"
        with pointed_at(raw_dir.resolve(), Path(tmp) / "marts", db_path):
            causes: list[str] = []
            result = materialize_all(
                dg.DagsterInstance.ephemeral(), {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
                on_failure=lambda event: causes.append(failure_line(event) or event.event_type_value),
                asset_selection=checking_assets())
        if not db_path.is_file():
            raise RuntimeError(f"overlay: {raw_dir} was not read: {'; '.join(causes) or 'the run stopped'}")
        with duckdb.connect(str(db_path), read_only=True) as conn:
            tables = {row[0] for row in conn.sql("show tables").fetchall()}
            if "run_metrics" not in tables:
                raise RuntimeError(f"overlay: {raw_dir} was not read to its metrics: "
                                   f"{'; '.join(causes) or 'the run stopped'}")
            names = {row[0] for row in conn.sql("describe run_metrics").fetchall()}
            runs = conn.sql(f"select {', '.join(c for c in INPUT_COLUMNS if c in names)} from run_metrics "
                            "order by price_book, run_id").to_arrow_table()
            quarantined = (conn.sql("select source_file, source_row, reason_code, detail, stage from quarantine "
                                    "order by source_file, source_row, reason_code").to_arrow_table().to_pylist()
                           if "quarantine" in tables else [])
    if not result.success and runs.num_rows == 0:
        raise RuntimeError(f"overlay: no run of {raw_dir} reached the metrics: {'; '.join(causes)}")
    return runs, quarantined


def build_overlay(raw_dir: Path, marts: Path, out: Path) -> Path:
    """The overlay's explorer page: the published marts of ``marts`` (``runs/``, ``regressions``; read only) with
    ``check_folder(raw_dir)``'s runs as unofficial points and its quarantine listed.

    Args:
        raw_dir: the user's folder of result files.
        marts: the published mart folder (``PIPELINE_OUT_DIR``).
        out: the folder the page (``explorer.html``) and its ``assets/`` are written to (created).
    Returns:
        The page's path.
    Raises:
        FileNotFoundError: no published ``runs/`` mart in ``marts`` (run ``python -m pipeline run`` first), or
            ``raw_dir`` is not a folder.
        RuntimeError: as ``check_folder``.
    """
    from pipeline.cli.regressions import read_regressions
    from pipeline.comparisons.explorer import explorer_data, write_explorer
    from pipeline.io.storage import read_mart
    from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

    try:
        official = read_mart(marts, "runs")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"overlay: no published runs mart in {marts} (python -m pipeline run first)") from exc
    unofficial, quarantined = check_folder(raw_dir)
    data = explorer_data(official, DEFAULT_PRICE_BOOK, read_regressions(marts) or [], unofficial=unofficial,
                         quarantined=quarantined)
    return write_explorer(data, out, title="Explorer with unofficial runs", unofficial_note=(
        f"Unofficial: {unofficial.num_rows} run row(s) of {raw_dir} (every price book), checked by the pipeline's "
        f"rules and drawn as black crosses labelled \"unofficial\"; they are on no frontier, in no table and in no "
        f"mart. {len(quarantined)} input(s) quarantined, listed at the end."))


def run_overlay(args: argparse.Namespace, marts: Path) -> int:
    """The ``overlay`` command: build the page (``build_overlay``) into ``--out`` (default: a new temporary
    folder), print its path, open it in the default browser unless ``--no-open``. Exit 0 written; 1 the folder or
    the published marts are missing, or nothing of the folder could be read (one line says why)."""
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="overlay-"))
    try:
        page = build_overlay(Path(args.raw_dir), marts, out)
    except (FileNotFoundError, RuntimeError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(page)
    if not args.no_open:
        webbrowser.open(page.resolve().as_uri())
    return 0
