"""Regressions found and announced: change points in every line's and every frontier's history (the
``regressions`` mart), a warning check that names the new ones, and a webhook notification sent once each."""

import datetime as dt
import os
from pathlib import Path
from typing import Optional

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dagster_duckdb import DuckDBResource

from pipeline.comparisons.regressions import (
    FRONTIER_INPUT_COLUMNS,
    FRONTIER_METRICS,
    REGRESSION_SCHEMA,
    DetectionSettings,
    JudgedSeries,
    assign_status,
    failure_runs,
    frontier_series_batches,
    line_series_by_metric,
    load_metric_rules,
    regressions_markdown,
    slack_message,
)
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import table_metadata
from pipeline.io.generations import published_dir
from pipeline.io.paths import sql_text
from pipeline.io.storage import table_names, write_parquet_atomic, write_table
from pipeline.io.webhook import WebhookError, post_json

REGRESSIONS_KEY = dg.AssetKey(["comparisons", "regressions"])
# The webhook new regressions are announced to (Slack-compatible incoming webhook URL); unset: none is sent.
WEBHOOK_ENV = "PIPELINE_REGRESSION_WEBHOOK"
_DEFAULTS = DetectionSettings()


class RegressionConfig(dg.Config):
    """Run config of ``comparisons/regressions``: the detection thresholds (``DetectionSettings``; defaults
    measured by ``benchmarks/regressions.py``, docs/regressions.md) and the webhook."""

    max_p_value: float = _DEFAULTS.max_p_value
    min_points_before: int = _DEFAULTS.min_points_before
    min_points_after: int = _DEFAULTS.min_points_after
    window: int = _DEFAULTS.window
    penalty: float = _DEFAULTS.penalty
    min_magnitude: Optional[float] = None  # None: each metric's own (data/reference/regression_metrics.csv)
    webhook_url: str = ""  # empty: the PIPELINE_REGRESSION_WEBHOOK environment variable, else no notification

    def settings(self) -> DetectionSettings:
        """These thresholds as ``DetectionSettings``."""
        return DetectionSettings(self.max_p_value, self.min_points_before, self.min_points_after, self.window,
                                 self.penalty, self.min_magnitude)


@dg.asset(key=REGRESSIONS_KEY, group_name="comparisons", kinds={"python", "duckdb", "parquet"},
          deps=[dg.AssetKey(["metrics", "run_metrics"]), dg.AssetKey(["comparisons", "trends"])],
          pool=WAREHOUSE_POOL)
def regressions(context: dg.AssetExecutionContext, config: RegressionConfig, warehouse: DuckDBResource,
                paths: PipelinePaths) -> dg.MaterializeResult:
    """Regressions and improvements found in the history: one row per change point (docs/regressions.md).

    Series: per line (``line_id``) and concurrency, each successive sweep's tok/s/GPU, median TPOT (s), p99 TTFT
    (s) (``sql/regression_line_runs.sql``) and failure rate (``sql/regression_failure_runs.sql``: failing sweeps
    count although they never reach a frontier); per frontier group and price book, each date's frontier at the
    middle target (``target_index`` 2) of each comparison holding the group (``trends``: tok/s/GPU, $/M tokens
    hyperscaler, tok/s/MW; comparisons sharing a target give one series). Which way is better and each
    metric's minimum magnitude: ``data/reference/regression_metrics.csv``. Detection:
    ``pipeline.comparisons.regressions.find_changes`` (ruptures' binary segmentation, then a Student t-test
    against the series' noise, a minimum magnitude and two bad nights in a row), thresholds in run config.

    Columns: series keys, ``metric``, ``direction`` (regression / improvement), ``last_good_date``,
    ``first_bad_date``, the sweeps before and after, ``mean_before``/``mean_after`` (metric units),
    ``magnitude_pct``, ``p_value``, ``noise_pct``, ``method``, ``status`` (new: first found by this run; ongoing;
    recovered: a later change undid it), ``detected_at`` and ``notified_at`` (UTC). The previous run's rows
    (the warehouse table, else the published mart) say which changes are already known and announced.

    Notification: every open regression (not recovered) not yet announced is posted once to the webhook of run
    config ``webhook_url`` or ``PIPELINE_REGRESSION_WEBHOOK`` (Slack-compatible JSON), and marked
    ``notified_at``; without a webhook nothing is sent (the check ``no_new_regressions`` still names them); a
    webhook that fails is logged and tried again by the next run. Mart: ``regressions.parquet``.
    """
    settings = config.settings()
    rules = load_metric_rules()
    line_metrics = [m for m in ("tput_per_gpu", "median_tpot_s", "p99_ttft_s") if ("line", m) in rules]
    # the middle target of each comparison holding a group (the one the pages' headline sentences read): its three
    # targets read one frontier, so a step there shows at each, and three series would announce it thrice
    frontier_metrics = [m for m in FRONTIER_METRICS if ("frontier", m) in rules]
    # each input is read when its series are built, with the warehouse let go meanwhile (its cache of what it read
    # is dropped then), and each batch of series (a few hundred, of one metric for a line) is judged and let go
    # before the next is built: never every input and every series at once
    judged = JudgedSeries(rules, settings)
    with warehouse.get_connection() as conn:
        tables = table_names(conn)
        previous = (conn.sql("select * from regressions").to_arrow_table()
                    if "regressions" in tables else _published_regressions(Path(paths.out_dir)))
        runs = conn.sql(sql_text("regression_line_runs")).to_arrow_table()
    for batch in line_series_by_metric(runs, line_metrics):
        judged.add(batch)
    del runs
    judged.sort_found()  # the line series' changes in line_series' order: by series id, then metric
    if {"raw_runs", "validated_runs", "validation_rejects"} <= tables and ("line", "failure_rate") in rules:
        with warehouse.get_connection() as conn:
            failures = conn.sql(sql_text("regression_failure_runs")).to_arrow_table()
        if failures.num_rows:
            for batch in line_series_by_metric(failure_runs(failures), ["failure_rate"]):
                judged.add(batch)
        del failures
    if "trends" in tables:
        with warehouse.get_connection() as conn:
            trends = conn.sql(f"select {', '.join([*FRONTIER_INPUT_COLUMNS, *frontier_metrics])} from trends "
                              "where target_index = 2").to_arrow_table()
        for batch in frontier_series_batches(trends, frontier_metrics):
            judged.add(batch)
        del trends
    now = dt.datetime.now(dt.timezone.utc)
    table = assign_status(judged.found, previous, now)
    table, sent, failure = _notify(table, config.webhook_url or os.environ.get(WEBHOOK_ENV, ""), now)
    if failure:
        context.log.warning(f"regressions: notification not sent ({failure}); the next run tries again")
    with warehouse.get_connection() as conn:
        write_table(conn, "regressions", table)
    path = paths.published(context, write_parquet_atomic(table, paths.mart(context, "regressions")))
    paths.publish_unless_later(context, warehouse)
    counts = {(d, s): 0 for d in ("regression", "improvement") for s in ("new", "ongoing", "recovered")}
    for row in table.select(["direction", "status"]).to_pylist():
        counts[(row["direction"], row["status"])] += 1
    context.log.info(f"regressions: {judged.series} series, {table.num_rows} changes, {sent} announced -> {path}")
    return dg.MaterializeResult(metadata={
        **table_metadata(table, path=path, mart="regressions", preview_columns=[
            "series_id", "metric", "direction", "status", "first_bad_date", "mean_before", "mean_after",
            "magnitude_pct", "p_value"]),
        "series": judged.series,
        # a series shorter than this cannot be judged: it says so rather than look like a clean history
        "series_long_enough": judged.long_enough,
        "new_regressions": counts[("regression", "new")],
        "open_regressions": counts[("regression", "new")] + counts[("regression", "ongoing")],
        "improvements": sum(v for (d, _), v in counts.items() if d == "improvement"),
        "announced": sent,
        "webhook": "configured" if (config.webhook_url or os.environ.get(WEBHOOK_ENV)) else "none",
    })


def _published_regressions(out_dir: Path) -> pa.Table | None:
    """The published ``regressions.parquet`` (the state of a warehouse that was rebuilt), or None."""
    path = published_dir(out_dir) / "regressions.parquet"
    return pq.read_table(path).cast(REGRESSION_SCHEMA) if path.is_file() else None


def _notify(table: pa.Table, url: str, now: dt.datetime) -> tuple[pa.Table, int, str | None]:
    """Post the open regressions not yet announced (``notified_at`` null, ``status`` not recovered) to ``url``
    in one message (``slack_message``) and set their ``notified_at`` to ``now``: (table, rows announced, why the
    post failed or None). Nothing is posted without ``url`` or without such rows."""
    pending = pc.and_(pc.and_(pc.equal(table["direction"], "regression"), pc.not_equal(table["status"], "recovered")),
                      pc.is_null(table["notified_at"]))
    rows = table.filter(pending).to_pylist()
    if not url or not rows:
        return table, 0, None
    try:
        post_json(url, slack_message(rows))
    except WebhookError as exc:
        return table, 0, str(exc)
    stamped = pc.if_else(pending, pa.scalar(now, REGRESSION_SCHEMA.field("notified_at").type), table["notified_at"])
    return table.set_column(table.schema.get_field_index("notified_at"), "notified_at", stamped), len(rows), None


@dg.asset_check(asset=REGRESSIONS_KEY, blocking=False, description=(
    "Warning: this run found no new regression (a line or frontier that got slower or dearer beyond its noise "
    "and minimum magnitude). Fails naming each new one: line, metric, before → after, %, first bad date, runs."))
def no_new_regressions(warehouse: DuckDBResource) -> dg.AssetCheckResult:
    """Fails (WARN) when ``regressions`` holds a row with direction ``regression`` and status ``new``; metadata
    ``regressions``: a Markdown table of them (``regressions_markdown``), ``new_regressions``: their count."""
    with warehouse.get_connection() as conn:
        rows = conn.sql("select * from regressions where direction = 'regression' and status = 'new' "
                        "order by first_bad_date, series_id, metric").to_arrow_table().to_pylist()
    metadata = {"new_regressions": len(rows)}
    if rows:
        metadata["regressions"] = dg.MetadataValue.md(regressions_markdown(rows))
    return dg.AssetCheckResult(passed=not rows, severity=dg.AssetCheckSeverity.WARN, metadata=metadata)
