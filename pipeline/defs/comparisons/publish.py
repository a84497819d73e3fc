"""The last step of a run: every mart it wrote becomes visible at once, as one generation."""

from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.comparisons.assets import COMPARISONS_KEY
from pipeline.defs.comparisons.regressions import REGRESSIONS_KEY
from pipeline.defs.resources import (
    PUBLISHED_MARTS_KEY,
    REBUILD_MARKER_TABLE,
    WAREHOUSE_POOL,
    PipelinePaths,
)
from pipeline.io.generations import CURRENT
from pipeline.io.publish_guard import DEFAULT_MAX_LOSS_SHARE, RECORD, read_record
from pipeline.io.storage import table_names

# Every asset that writes a mart into the run's staging folder.
MART_KEYS = [dg.AssetKey(["validate", "quarantine"]), dg.AssetKey(["validate", "ingest_ledger"]),
             dg.AssetKey(["metrics", "run_metrics"]), dg.AssetKey(["metrics", "run_slo"]),
             dg.AssetKey(["frontiers", "pareto_frontiers"]), COMPARISONS_KEY, dg.AssetKey(["comparisons", "trends"]),
             dg.AssetKey(["comparisons", "report"]), REGRESSIONS_KEY]


class NoAcceptedRunsError(RuntimeError):
    """No run of any date passed validation: publishing would replace the marts with empty tables that look like
    a night without benchmarks. One line with the quarantine's counts by reason and where to read them."""


class WarehouseNotRefilledError(RuntimeError):
    """The warehouse was rebuilt after corruption and this run did not refill every run date: its marts would
    miss the other dates. One line naming the warehouse and what to run."""


class PublishConfig(dg.Config):
    """Run config of ``comparisons/published_marts`` (``pipeline.io.publish_guard``): how many accepted runs a
    publish may lose against the last confirmed publish, and whether this warehouse takes the mart folder over.
    ``python -m pipeline run --allow-shrink`` / ``--switch-warehouse`` set these and the ingest's alike."""

    allow_shrink: bool = False
    max_run_loss_share: float = DEFAULT_MAX_LOSS_SHARE
    switch_warehouse: bool = False


@dg.asset(key=PUBLISHED_MARTS_KEY, group_name="comparisons", kinds={"parquet"}, deps=MART_KEYS,
          pool=WAREHOUSE_POOL)
def published_marts(context: dg.AssetExecutionContext, config: PublishConfig, warehouse: DuckDBResource,
                    paths: PipelinePaths) -> dg.MaterializeResult:
    """Publish this run's marts together (``pipeline.io.generations.publish``): the run's staging folder becomes
    ``<PIPELINE_OUT_DIR>/.generations/<UTC time>-<run id>`` and ``current`` (and through it ``runs/``,
    ``quarantine/``, ``frontiers.parquet``, ``frontiers_slo.parquet``, ``comparisons.parquet``,
    ``comparisons_slo.parquet``, ``ingest_ledger/``, ``trends/``,
    ``run_slo/``, ``requests/``, ``regressions.parquet``, ``report/``) switches to it in one rename. Runs only when every mart asset of the run succeeded and no
    blocking check failed, so a failed or killed run leaves the previous generation in place.

    Guarded (``pipeline.io.publish_guard.guarded_publish``, under the publish lock, on the generation as it will
    be published, every date's ``runs/`` partitions included): its accepted runs per line and run date are judged
    against the last confirmed publish, and the generation records them, the baseline and this warehouse in
    ``_accepted_runs.parquet``.

    Raises:
        WarehouseNotRefilledError: the warehouse was rebuilt after corruption (``warehouse_rebuild`` table) and
            no run has refilled every run date yet; nothing is published.
        AcceptedRunsLossError: over ``max_run_loss_share`` of the last confirmed publish's accepted runs lost,
            without ``allow_shrink``; nothing is published.
        OtherWarehouseError: the current generation was published from another warehouse, without
            ``switch_warehouse``; nothing is published.
        RecordUnreadableError: the current generation's ``_accepted_runs.parquet`` cannot be read; nothing is
            published.
        NoAcceptedRunsError: the warehouse holds no accepted run of any date (``validated_runs`` is empty): every
            file was quarantined or none was a run log; nothing is published and the previous marts stay current.
    """
    with warehouse.get_connection() as conn:
        rebuilt = REBUILD_MARKER_TABLE in table_names(conn)
        moved_to = conn.execute(f"select moved_to from {REBUILD_MARKER_TABLE}").fetchone()[0] if rebuilt else None
        # a warehouse that validated nothing this run (assets invoked directly) has no table: nothing to judge
        validated = "validated_runs" in table_names(conn)
        accepted = conn.execute("select count(*) from validated_runs").fetchone()[0] if validated else None
        reasons = conn.execute("select reason_code, count(*) as n from quarantine group by all "
                               "order by n desc, reason_code limit 5").fetchall() if accepted == 0 else []
    if accepted == 0:
        counted = ", ".join(f"{code} {n}" for code, n in reasons) or "no run log found"
        raise NoAcceptedRunsError(
            f"no run accepted ({counted}): nothing published, the previous marts stay current; the quarantine "
            "(table quarantine in the warehouse, asset validate/quarantine) names each file's reason")
    if rebuilt:
        raise WarehouseNotRefilledError(
            f"warehouse rebuilt after corruption (old file kept at {moved_to}) holds only the run dates this run "
            "refreshed: nothing published; refill every date with `python -m pipeline run` (or the nightly refresh)")
    generation = paths.publish_guarded(context, warehouse, config.allow_shrink, config.max_run_loss_share,
                                       config.switch_warehouse)
    if generation is None:
        context.log.info("this run wrote no mart: nothing to publish")
        return dg.MaterializeResult(metadata={"generation": "none"})
    verdict = record_summary(generation)
    context.log.info(f"published {generation.name}: {Path(paths.out_dir) / CURRENT} -> {generation} ({verdict})")
    return dg.MaterializeResult(metadata={
        "generation": generation.name,
        "generation_path": dg.MetadataValue.path(str(generation)),
        "marts": dg.MetadataValue.path(paths.out_dir),
        "accepted_runs_vs_baseline": verdict,
    })


def record_summary(generation: Path) -> str:
    """One line from the generation's ``_accepted_runs.parquet``: accepted runs, the baseline judged against and
    the runs lost, e.g. "84 accepted runs; baseline 84 (…); 0 lost; baseline now this generation"."""
    record = read_record(generation)
    if record is None:
        return f"no {RECORD}"
    meta = record.meta
    against = "no baseline (first publish)" if meta.get("baseline_runs") is None else \
        f"baseline {meta['baseline_runs']} ({meta.get('judged_against')}); {meta.get('lost_runs')} lost"
    return (f"{meta.get('accepted_runs')} accepted runs; {against}; baseline now "
            f"{'this generation' if meta.get('confirmed') else meta.get('baseline_since')}")
