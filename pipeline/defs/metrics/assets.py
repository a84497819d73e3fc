"""Metrics stage: the GPU reference and per-run metrics computed in DuckDB SQL (sql/run_metrics.sql)."""

import hashlib
from collections import Counter
from itertools import chain
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from dagster_duckdb import DuckDBResource

from pipeline.defs.metrics.reference import GPU_REFERENCE_KEY, PRICE_BOOKS_KEY
from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import REBUILD_MARKER_TABLE, WAREHOUSE_POOL, PipelinePaths, generation_id
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.io.paths import sql_text
from pipeline.io.storage import (
    RUN_METRICS_CHANGES,
    RUN_POWER_CHANGES,
    caught_up,
    date_groups,
    keep_openable,
    logged_partitions,
    prune_mart_partitions,
    replace_mart_partitions,
    replace_partitions,
    restaged_dates,
    table_names,
    write_mart_partitions,
    write_table,
)
from pipeline.metrics.lineage import refresh_lineage
from pipeline.metrics.power import POWER_SCHEMA, measure_runs
from pipeline.metrics.request_stats import request_stats_view
from pipeline.metrics.slo import load_slos

RUN_POWER_KEY = dg.AssetKey(["metrics", "run_power"])
VALIDATED_KEY = dg.AssetKey(["validate", "accepted_runs"])
RAW_REQUESTS_KEY = dg.AssetKey(["ingest", "parsed_requests"])


@dg.asset(key=RUN_POWER_KEY, group_name="metrics", kinds={"python", "duckdb"}, deps=[VALIDATED_KEY, GPU_REFERENCE_KEY],
          pool=WAREHOUSE_POOL, partitions_def=RUN_DATE_PARTITIONS, backfill_policy=SINGLE_RUN)
def run_power(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Measured GPU power per run (``pipeline.metrics.power``): energy integrated over the benchmark window from the
    telemetry CSV named by the run's ``power_log`` (nvidia-smi, amd-smi watch, pynvml, DCGM/InferenceX samples),
    or the power InferenceX rows report themselves.

    Grain: one row per run with any power information. Columns: ``power_source``, ``window_source`` (how the
    window was placed), ``window_start``/``window_end`` (s), ``gpus_seen``, ``samples_in_window``,
    ``power_valid`` and ``power_invalid_reason`` (too_few_samples, gap_too_long, too_few_gpus,
    window_not_covered, duration_mismatch, clock_mismatch, no_timestamps, no_window, power_log_missing,
    implausible_power …),
    ``energy_j`` (J, all GPUs) and ``avg_power_w_per_gpu`` (W), null when invalid: never a guess.
    """
    keys = list(context.partition_keys)
    with warehouse.get_connection() as conn:
        conn.execute(sql_text("run_gpu_counts"))
        runs = conn.sql("select v.*, c.num_gpus, g.power_kw as reference_power_kw from validated_runs v "
                        "join run_gpu_counts c using (run_id) left join gpu_reference g on g.hw = v.hw "
                        "where list_contains($keys, v.run_date_partition) "
                        # the runs measure_runs reads; the rest have no power to measure (no per-row Python)
                        "and (v.power_log is not null or v.reported_avg_power_w_per_gpu is not null)",
                        params={"keys": keys}).to_arrow_table()
        table = pa.Table.from_pylist(measure_runs(runs.to_pylist(), Path(paths.raw_dir)), schema=POWER_SCHEMA)
        replace_partitions(conn, "run_power", table, keys)
        drop_runs_not_validated(conn, "run_power", RUN_POWER_CHANGES)
    reasons = Counter(r or "valid" for r in table.column("power_invalid_reason").to_pylist())
    context.log.info(f"run_power: {table.num_rows} runs with power information {dict(reasons)}")
    return dg.MaterializeResult(metadata={**table_metadata(table, preview_columns=[
        "run_id", "power_source", "window_source", "power_valid", "power_invalid_reason", "avg_power_w_per_gpu"]),
        "outcomes": counts_markdown(dict(reasons), "power outcome")})




@dg.asset(
    key=["metrics", "run_metrics"],
    group_name="metrics",
    kinds={"duckdb", "sql", "parquet"},
    # raw_requests: the agentic x-axis from per-request records (sql/run_request_stats.sql)
    deps=[VALIDATED_KEY, PRICE_BOOKS_KEY, RUN_POWER_KEY, RAW_REQUESTS_KEY],
    pool=WAREHOUSE_POOL,
    partitions_def=RUN_DATE_PARTITIONS,
    backfill_policy=SINGLE_RUN,
)
def run_metrics(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """Per-run metrics (``sql/run_metrics.sql``): one row per validated run with its metadata and

    - ``num_gpus``; ``tput_per_gpu``, ``output_tput_per_gpu``, ``input_tput_per_gpu`` (tok/s/GPU; disaggregated
      runs divide output by decode GPUs and input by prefill GPUs);
    - ``{mean,median,p90,p99}_intvty`` (tok/s/user) as the parser computed them, 1000 / TPOT in ms from the
      file's own value (1 / TPOT when the file gives seconds); latencies ``*_s`` in seconds;
    - ``x_intvty`` (tok/s/user), the frontier x-axis, and ``x_intvty_stat``, the statistic it holds:
      ``median_intvty`` (fixed-sequence runs), ``e2e_norm_intvty_p90`` (agentic runs with the row's own value or
      per-request records: 1 / p90(E2EL / OSL), from ``ingest/parsed_requests``' ``raw_requests`` through the view
      ``run_request_stats``, sql/run_request_stats.sql) or ``mean_osl_over_p90_e2el`` (agentic runs with neither:
      the row's stand-in);
    - ``cost_per_mtok_{hyperscaler,neocloud,rental}`` ($/M tokens; ``input_``/``output_`` variants);
    - ``tok_s_per_mw`` (tok/s per MW of all-in power) and ``j_per_token`` (J/token);
    - ``mean_input_len``/``mean_output_len`` (measured, beside nominal ``isl``/``osl``) and
      ``length_off_nominal`` (sql/run_lengths.sql: off the mean the nominal ISL/OSL and range ratio imply, or
      unverified; such runs are left off frontiers), ``failure_rate``;
    - measured power beside the all-in estimate: ``avg_power_w_per_gpu`` (W), ``energy_j``,
      ``measured_tok_s_per_mw``, ``measured_j_per_token``, ``measured_j_per_output_token`` (null without valid
      telemetry, ``power_invalid_reason`` says why);
    - the latest-run columns (``pipeline.metrics.lineage``, docs/metrics.md "Latest run per line"): ``line_id``,
      ``sweep_id``, ``superseded_by`` (the line's next newer sweep; null when the run is current),
      ``repeat_group`` and ``repeat_n`` (runs of one line, sweep and conc). They are recomputed for the lines
      whose runs changed, over every date, so the files of the dates whose runs a new sweep supersedes (the
      sweep before it) are rewritten too.

    Grain: one row per (run, ``price_book``): costs and all-in power come from that book.
    Formulas: docs/metrics.md (InferenceX utils/process_result.py and the dashboard).
    Mart: ``runs/``, partitioned ``<model>/<run_date>/`` (``pipeline.io.storage.replace_mart_partitions``):
    a run rewrites the files of its dates only (and of dates whose runs' files vanished).
    """
    keys = list(context.partition_keys)
    with warehouse.get_connection() as conn:
        conn.execute(sql_text("run_gpu_counts"))
        conn.execute(sql_text("run_lengths"))
        request_stats_view(conn)
        fresh = conn.sql(sql_text("run_metrics"), params={"partition_keys": keys})
        exists = "run_metrics" in table_names(conn)
        # lines whose runs these partitions held: a run that is gone from them changes its line's lineage
        replaced = {row[0] for row in conn.execute(
            "select distinct line_id from run_metrics where list_contains($keys, run_date_partition) "
            "and line_id is not null", {"keys": keys}).fetchall()} if exists else set()
        replace_partitions(conn, "run_metrics", fresh, keys)
        emptied = drop_runs_not_validated(conn, "run_metrics", RUN_METRICS_CHANGES, "run_date_partition, line_id")
        # a new sweep supersedes the sweep before it, whatever its date: those rows and runs/ files change too
        relined = refresh_lineage(conn, replaced | {row[1] for row in emptied if row[1] is not None})
        folder = paths.mart_folder(context, "runs")
        # and the dates a refused or failed run left unpublished, or whose runs went unseen by this warehouse
        dates = restaged_dates(conn, folder, set(keys) | {row[0] for row in emptied} | set(relined),
                               generation_id(context), "select distinct run_date_partition from run_metrics")
        first, rows, written = write_runs_mart(conn, folder, dates)
        total = conn.execute("select count(*) from run_metrics").fetchone()[0]
        if set(keys) >= set(context.instance.get_dynamic_partitions(RUN_DATE_PARTITIONS.name)):
            # every run date refilled: a warehouse rebuilt after corruption is whole again
            conn.execute(f"drop table if exists {REBUILD_MARKER_TABLE}")
    paths.publish_unless_later(context, warehouse)
    folder = paths.published(context, folder)
    context.log.info(f"run_metrics: {rows} rows in {len(dates)} dates ({len(written)} partition files) "
                     f"of {total} -> {folder}")
    metadata = table_metadata(
        first, path=folder, mart="runs",
        preview_columns=["model", "hw", "precision", "spec_decoding", "framework", "conc", "median_intvty",
                         "tput_per_gpu", "cost_per_mtok_hyperscaler", "tok_s_per_mw"],
    )
    return dg.MaterializeResult(metadata={**metadata, "dagster/row_count": rows})


# rows of runs that validated_runs no longer holds in that run date (their file vanished, a rule now rejects them,
# their date moved)
NOT_VALIDATED_SQL = ("delete from {table} t where {scope} not exists (select 1 from validated_runs v where "
                     "v.run_id = t.run_id and v.run_date_partition = t.run_date_partition {scope_v}) "
                     "returning {returning}")


def drop_runs_not_validated(conn: duckdb.DuckDBPyConnection, table: str, log: str,
                            returning: str = "run_date_partition") -> list[tuple]:
    """Delete the rows of warehouse table ``table`` whose run is not in ``validated_runs`` under that run date.

    ``table``: ``run_metrics`` or ``run_power``, one or more rows per run, columns ``run_id`` and
    ``run_date_partition``. Only the dates ``validated_runs`` rewrote since the last call are checked (change log
    ``log``, which it writes: its own dates and those of rows whose files vanished; a night's dates instead of an
    anti-join of every row), every row when the log cannot say (``pipeline.io.storage.logged_partitions``).

    Returns:
        The deleted rows' ``returning`` columns (SQL column list), as tuples.
    """
    version = hashlib.md5(NOT_VALIDATED_SQL.encode()).hexdigest()
    dates = logged_partitions(conn, table, log, version)
    whole = dates is None
    rows = conn.execute(NOT_VALIDATED_SQL.format(
        table=table, returning=returning, scope="" if whole else "list_contains($dates, t.run_date_partition) and",
        scope_v="" if whole else "and list_contains($dates, v.run_date_partition)"),
        {} if whole else {"dates": dates}).fetchall()
    caught_up(conn, table, log, version)
    return rows


MART_CHUNK_ROWS = 200_000  # runs/ is sorted at most this many rows at a time (whole dates)
MART_WRITE_ROWS = 50_000  # and written as soon as this many rows of whole partitions have arrived


def write_runs_mart(conn: duckdb.DuckDBPyConnection, folder: Path, dates: list[str]) -> tuple[pa.Table, int, list[Path]]:
    """Write the ``runs/`` mart's partitions of ``dates`` from warehouse table ``run_metrics``
    (``pipeline.io.storage.write_mart_partitions``, then ``prune_mart_partitions``), so that a full refresh never
    holds the history, nor a large part of it, as Arrow.

    DuckDB sorts a group of whole run dates of at most ``MART_CHUNK_ROWS`` rows at a time (one larger date alone)
    into the files' order (model, ``run_date``, price book, file, row); the sorted rows arrive as a stream and are
    written whenever ``MART_WRITE_ROWS`` rows of whole (model, date) partitions have arrived (a partition is never
    split between two writes). One read of every row would hold the history as Arrow, on top of DuckDB's sort;
    a group of partitions read whole still holds the whole group, which the stream never does.

    Returns:
        (the first rows written: whole partitions of the earliest dates (``undated`` last), in the files' order
        (``run_metrics``' schema; no rows when ``dates`` hold none), the rows written, the partition files
        written).
    """
    first, rows, written = None, 0, []
    for group in date_groups(conn, "run_metrics", dates, MART_CHUNK_ROWS) or [[]]:
        sorted_rows = conn.sql(
            "select * from run_metrics where list_contains($dates, run_date_partition) "
            "order by model, run_date nulls last, price_book, source_file, source_row", params={"dates": group}
        ).to_arrow_reader(max(1, MART_WRITE_ROWS // 5))
        pending: list[pa.RecordBatch] = []
        for batch in chain(sorted_rows, [None]):  # None: the stream's end, where the last partition is whole
            if batch is not None:
                pending.append(batch)
                if sum(b.num_rows for b in pending) < MART_WRITE_ROWS:
                    continue
            table = pa.Table.from_batches(pending, schema=sorted_rows.schema)
            whole = table.num_rows if batch is None else _whole_partitions(table)
            if whole == 0 and table.num_rows:  # one partition larger than MART_WRITE_ROWS: read on
                continue
            if whole or first is None:
                written += write_mart_partitions(table.slice(0, whole), folder)
                rows += whole
                first = table.slice(0, whole) if first is None else first
            pending = table.slice(whole).to_batches()
    prune_mart_partitions(folder, dates, written)
    keep_openable(folder, first.schema)
    return first, rows, written


def _whole_partitions(table: pa.Table) -> int:
    """How many leading rows of ``table`` (sorted by model, then ``run_date``) belong to (model, date) partitions
    it holds whole, given more rows may follow: every row but those of its last (model, date)."""
    last = table.slice(table.num_rows - 1)
    same_model = pc.equal(table["model"], last["model"][0]) if last["model"][0].is_valid else pc.is_null(table["model"])
    same_date = pc.equal(table["run_date"], last["run_date"][0]) if last["run_date"][0].is_valid \
        else pc.is_null(table["run_date"])
    return table.num_rows - pc.sum(pc.and_(pc.fill_null(same_model, False), pc.fill_null(same_date, False))).as_py()


RUN_SLO_KEY = dg.AssetKey(["metrics", "run_slo"])


@dg.asset(
    key=RUN_SLO_KEY,
    group_name="metrics",
    kinds={"duckdb", "sql", "parquet"},
    deps=[VALIDATED_KEY, RAW_REQUESTS_KEY],
    pool=WAREHOUSE_POOL,
    partitions_def=RUN_DATE_PARTITIONS,
    backfill_policy=SINGLE_RUN,
)
def run_slo(context: dg.AssetExecutionContext, warehouse: DuckDBResource, paths: PipelinePaths) -> dg.MaterializeResult:
    """SLO attainment and goodput per run (``sql/run_slo.sql``) against every SLO of ``slos.csv`` in the reference
    folder (``pipeline.metrics.slo``), and the per-request mart.

    Grain: one row per (validated run, ``slo``): ``slo_basis`` ('per_request' | 'p99_summary'), ``requests``,
    ``requests_meeting_slo`` (int32), ``slo_attainment`` (fraction), ``slo_met`` (bool; null when a summary lacks
    a bounded p99), ``goodput_tok_s_per_gpu`` (tok/s/GPU: output tokens of the requests meeting the SLO /
    duration / GPUs; per-request basis only) and the SLO's bounds (s). Errored requests fail every SLO.
    Formulas: docs/metrics.md "SLOs, attainment and goodput".

    Marts: ``run_slo/`` and ``requests/`` (one row per request of a validated run, ``ingest/parsed_requests``'
    columns plus ``model`` and ``run_date``), both partitioned ``<model>/<run_date>/`` like ``runs/``.

    Raises:
        pipeline.metrics.slo.SloError: ``slos.csv`` is malformed (names the line and column).
    """
    keys = list(context.partition_keys)
    slos = load_slos()
    with warehouse.get_connection() as conn:
        write_table(conn, "slos", slos)
        conn.execute(sql_text("run_gpu_counts"))
        fresh = conn.sql(sql_text("run_slo"), params={"partition_keys": keys}).to_arrow_table()
        replace_partitions(conn, "run_slo", fresh, keys)
        fresh_rows = fresh.num_rows
        # counted in Arrow, and the rows let go: on a full refresh they are every run's, once per SLO
        bases = {f"{row['slo']}: {row['slo_basis']}": row["count_all"] for row in
                 fresh.group_by(["slo", "slo_basis"]).aggregate([([], "count_all")]).to_pylist()}
        del fresh
        emptied = conn.execute("delete from run_slo where run_id not in (select run_id from validated_runs) "
                               "or slo not in (select name from slos) returning run_date_partition").fetchall()
        dates = set(keys) | {row[0] for row in emptied}
        generation = generation_id(context)
        dates = sorted(set(restaged_dates(conn, paths.mart_folder(context, "run_slo"), dates, generation,
                                          "select distinct run_date_partition from run_slo"))
                       | set(restaged_dates(conn, paths.mart_folder(context, "requests"), dates, generation,
                                            "select distinct v.run_date_partition from raw_requests "
                                            "join validated_runs v using (run_id)")))
        table = conn.sql("select * from run_slo where list_contains($dates, run_date_partition) "
                         "order by run_id, slo", params={"dates": dates}).to_arrow_table()
    # each mart is written and let go before the next is read (the warehouse's cache is dropped in between)
    replace_mart_partitions(table, paths.mart_folder(context, "run_slo"), dates)
    slo_metadata = table_metadata(table, path=Path(paths.out_dir) / "run_slo", mart="run_slo", preview_columns=[
        "run_id", "slo", "slo_basis", "requests", "slo_attainment", "slo_met", "goodput_tok_s_per_gpu"])
    del table
    with warehouse.get_connection() as conn:
        requests = conn.sql(
            "select q.run_id, q.request_index, q.ttft_s, q.tpot_s, q.e2el_s, q.itl_p50_s, q.itl_p99_s, "
            "q.input_tokens, q.output_tokens, q.error, v.model, v.run_date, v.run_date_partition "
            "from raw_requests q join validated_runs v using (run_id) "
            "where list_contains($dates, v.run_date_partition) order by v.source_file, v.source_row, q.request_index",
            params={"dates": dates}).to_arrow_table()
    replace_mart_partitions(requests, paths.mart_folder(context, "requests"), dates)
    paths.publish_unless_later(context, warehouse)
    context.log.info(f"run_slo: {fresh_rows} (run, slo) rows for {len(keys)} dates; {requests.num_rows} requests "
                     f"-> {Path(paths.out_dir) / 'requests'}")
    return dg.MaterializeResult(metadata={
        **slo_metadata,
        "requests_in_mart": requests.num_rows,
        "slos": ", ".join(slos.column("name").to_pylist()) or "(none)",
        "basis_by_slo": counts_markdown(dict(bases), "slo: basis")})
