"""Ingest stage: raw engine logs → the normalized ``raw_runs`` table."""


from collections import Counter
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow as pa
from dagster_duckdb import DuckDBResource

from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import SNAPSHOT_TAG, WAREHOUSE_POOL, PipelinePaths, run_tag
from pipeline.defs.ui import PREVIEW_ROWS, counts_markdown, table_metadata, value_counts
from pipeline.ingest.folder import folder_rows
from pipeline.ingest.input_loss import DEFAULT_MAX_RUN_LOSS_SHARE, check_input_loss
from pipeline.ingest.parse_cache import CacheStats
from pipeline.ingest.schema import RUN_SCHEMA
from pipeline.ingest.requests import ARRAY_FORMATS, requests_tables
from pipeline.io.paths import check_writable_folder
from pipeline.io.publish_guard import check_writer, warehouse_identity
from pipeline.io.storage import note_raw_changes, replace_file_rows, replace_partitions, table_names, write_table


class IngestConfig(dg.Config):
    """Run config of ``ingest/parsed_runs``: how much input a scan may lose before the run stops unpublished, and
    whether this warehouse may take over a mart folder another warehouse published (``switch_warehouse``; the
    same fields of ``comparisons/published_marts`` guard the publish itself)."""

    allow_shrink: bool = False
    max_run_loss_share: float = DEFAULT_MAX_RUN_LOSS_SHARE
    switch_warehouse: bool = False


@dg.asset(
    key=["ingest", "parsed_runs"],
    group_name="ingest",
    kinds={"python", "duckdb"},
    pool=WAREHOUSE_POOL,
    partitions_def=RUN_DATE_PARTITIONS,
    backfill_policy=SINGLE_RUN,
)
def raw_runs(context: dg.AssetExecutionContext, config: IngestConfig, warehouse: DuckDBResource,
             paths: PipelinePaths) -> dg.MaterializeResult:
    """Every run found under ``PIPELINE_RAW_DIR``, parsed and normalized, before validation.

    Grain: one row per run (a JSON object, an array element or a JSON Lines line), schema
    ``pipeline.ingest.schema.RUN_SCHEMA``: metadata keys of docs/inputs.md resolved from the file, its ``.meta.json``
    sidecar or ``runs.csv`` (``metadata_sources`` says which), latencies in seconds (``*_s``), system
    throughputs in tok/s (``*_tput_tok_s``). Formats are detected from content: vLLM ``bench serve`` JSON,
    SGLang ``bench_serving`` JSONL, TRT-LLM ``--report_json`` and serve JSON, InferenceX agg rows and the
    InferenceX dashboard export.

    Partitioned by ``run_date_partition`` (the run's date, or ``undated``): a run for some dates replaces only
    those dates' rows. Also rewrites ``raw_rejects`` (rows and files that gave no run, with a reason code; stage
    ``ingest``) and ``raw_files`` (one row per file: kind, size, sha256, rows read, whether it holds per-request
    arrays), which are per file, not per date; rows of files that no longer exist are dropped from every
    partition.

    Only files that changed since the last scan are parsed (``pipeline.ingest.parse_cache``: content hashes of the file,
    its sidecar and its runs.csv); the rest come from the parse cache, with identical rows. A run started from a
    scan (run tag ``pipeline/raw_snapshot``: the sensor's tick, the partition discovery of the nightly schedule
    and the CLI) does not scan again: while the cache holds that scan's state, its runs are streamed from the
    cache's files into DuckDB a record batch at a time (``pipeline.ingest.folder.folder_rows``).

    Fails closed, before writing anything (``pipeline.ingest.input_loss``): a missing, unreadable or empty raw
    folder, or a scan with more than ``max_run_loss_share`` (run config, default 20 %) fewer runs than the last
    one, raises with a one-line cause and every mart stays as it was; ``allow_shrink: true`` accepts a
    deliberate shrink. A mart or parse-cache folder that cannot be written (a file in its place, a read-only
    volume) fails first, in one line (``pipeline.io.paths.OutputLocationError``), and so does a mart folder whose
    current generation another warehouse published (``pipeline.io.publish_guard.OtherWarehouseError``, unless
    ``switch_warehouse``).
    """
    keys = list(context.partition_keys)
    raw_dir = Path(paths.raw_dir)
    check_writable_folder(paths.out_dir, "PIPELINE_OUT_DIR")  # fail in one line now, not after the parse
    check_writable_folder(paths.cache_dir, "PIPELINE_CACHE_DIR")
    with warehouse.get_connection() as conn:  # one writer per mart folder: refuse before any work
        check_writer(Path(paths.out_dir), warehouse_identity(conn, warehouse.database), config.switch_warehouse)
    # a run started from a scan (the sensor's tick, the partition discovery) reads the folder as that scan saw it:
    # no second scan, and the runs streamed from the parse cache into DuckDB, when the cache still holds it
    folder = folder_rows(raw_dir, Path(paths.cache_dir), snapshot=run_tag(context, SNAPSHOT_TAG), dates=keys)
    with warehouse.get_connection() as conn:
        previous = conn.execute("select count(*) from raw_runs").fetchall()[0][0] \
            if "raw_runs" in table_names(conn) else None
        check_input_loss(raw_dir, folder.files.num_rows, folder.num_runs, previous, config.max_run_loss_share,
                         config.allow_shrink)
        conn.register("_folder_runs", folder.runs)
        dates = {"keys": keys}
        try:
            # list_contains, not "in (subquery)": DuckDB's semi-join would hold every streamed run in memory
            replace_partitions(conn, "raw_runs", conn.sql(
                "select * from _folder_runs where list_contains($keys, run_date_partition)", params=dates), keys)
        finally:
            conn.unregister("_folder_runs")
        # what the asset reports, read back from the rows just written
        written = "from raw_runs where list_contains($keys, run_date_partition)"
        formats = dict(conn.execute(f"select source_format, count(*) {written} group by all", dates).fetchall())
        preview = conn.sql(f"select * {written} order by source_file, source_row limit {PREVIEW_ROWS}",
                           params=dates).to_arrow_table().cast(RUN_SCHEMA)
        write_file_tables(conn, folder.rejects, folder.files, folder.stats)
        note_raw_changes(conn, "partition", keys)
    runs, cache = sum(formats.values()), folder.stats
    context.log.info(
        f"{folder.files.num_rows} files ({cache.parsed} parsed, {cache.reused} from the parse cache): "
        f"{runs} runs in {keys[:3]}{'…' if len(keys) > 3 else ''}, {folder.rejects.num_rows} rejected rows")
    kinds = value_counts(folder.files["kind"])
    return dg.MaterializeResult(
        metadata={
            **table_metadata(preview, preview_columns=["source_file", "source_format", "model", "hw",
                                                       "precision", "spec_decoding", "conc"]),
            "dagster/row_count": runs,
            "raw_dir": dg.MetadataValue.path(paths.raw_dir),
            "files_scanned": folder.files.num_rows,
            "files_parsed": cache.parsed,
            "files_from_parse_cache": cache.reused,
            "rows_rejected_at_ingest": folder.rejects.num_rows,
            "runs_by_format": counts_markdown(formats, "source_format"),
            "files_by_kind": counts_markdown(dict(kinds), "kind"),
        }
    )


def write_file_tables(conn: duckdb.DuckDBPyConnection, rejects: pa.Table, files: pa.Table, cache: CacheStats) -> None:
    """Bring ``raw_rejects`` and ``raw_files`` (per file, every date) to the folder state ``rejects`` and ``files``
    hold and drop the ``raw_runs`` rows of files that are gone.

    Table ``raw_generation`` records which parse-cache generation the tables hold: when that is the state
    ``cache.changes`` started from (or one with the same rows, ``CacheChanges.starts_from``), only the touched
    files' rows are rewritten (a night's files, not the history's); when it is already ``cache.generation``,
    nothing is; otherwise both tables are rewritten whole. What was rewritten is noted for the ingest ledger
    (``note_raw_changes``).

    Args:
        conn: the warehouse connection of the ingest asset (``raw_runs`` already written for its dates).
        rejects, files: the folder's rejects and files (``folder_rows``).
        cache: that scan's stats: ``generation`` the rows are, ``changes`` since which generation.
    """
    conn.execute("create table if not exists raw_generation (generation varchar)")
    stored = conn.execute("select max(generation) from raw_generation").fetchall()[0][0]
    changes = cache.changes
    if stored is not None and stored == cache.generation and {"raw_rejects", "raw_files"} <= table_names(conn):
        return
    delta = changes is not None and changes.starts_from(stored) \
        and all(replace_file_rows(conn, name, table, changes.touched)
                for name, table in (("raw_rejects", rejects), ("raw_files", files)))
    if delta:
        conn.register("_touched", pa.table({"source_file": changes.touched}))
        # both sides of the anti-join cut to the touched files: neither reads every file's row
        conn.execute("delete from raw_runs where source_file in (select source_file from _touched) "
                     "and source_file not in (select source_file from raw_files "
                     "where source_file in (select source_file from _touched))")
        conn.unregister("_touched")
        note_raw_changes(conn, "file", changes.touched)
    else:
        write_table(conn, "raw_rejects", rejects)
        write_table(conn, "raw_files", files)
        conn.execute("delete from raw_runs where source_file not in (select source_file from raw_files)")
        note_raw_changes(conn, "all")
    conn.execute("delete from raw_generation")
    if cache.generation:
        conn.execute("insert into raw_generation values (?)", [cache.generation])


RAW_RUNS_KEY = dg.AssetKey(["ingest", "parsed_runs"])


@dg.asset(
    key=["ingest", "parsed_requests"],
    group_name="ingest",
    kinds={"python", "duckdb"},
    deps=[RAW_RUNS_KEY],
    pool=WAREHOUSE_POOL,
    partitions_def=RUN_DATE_PARTITIONS,
    backfill_policy=SINGLE_RUN,
)
def raw_requests(context: dg.AssetExecutionContext, warehouse: DuckDBResource,
                 paths: PipelinePaths) -> dg.MaterializeResult:
    """Per-request records of the runs whose harness saved them (``pipeline.ingest.requests``): vLLM / TRT-LLM
    serve ``--save-detailed`` arrays, SGLang ``--output-details`` arrays, AIPerf ``profile_export.jsonl`` (also
    beside a single-run InferenceX AgentX row: that run's records), GuideLLM ``requests``. ``metrics/run_metrics``
    reads them too: 1 / p90(E2EL / OSL) per run (``sql/run_request_stats.sql``), the agentic x-axis.

    Grain: one row per request, table ``raw_requests`` (``pipeline.ingest.requests.REQUEST_SCHEMA``): ``run_id``,
    ``request_index`` (int32, 0… in the file's order), ``ttft_s``/``tpot_s``/``e2el_s``/``itl_p50_s``/``itl_p99_s``
    (float64, seconds; null for an errored request), ``input_tokens``/``output_tokens`` (int64), ``error`` (text,
    null on success), ``run_date_partition``. Table ``raw_request_sources``: one row per run with a records file
    (``requests_file``, ``requests_read``), or the reason its records were not used (``requests_reason``: a
    code of ``REQUEST_REASONS``, e.g. ``length_mismatch:per_request``); such a run keeps its summary numbers.

    Files are streamed: JSON Lines a line at a time, a result file over the 32 MiB parse cap one array item at a
    time. A serve result the parse read whole without per-request arrays (``raw_files.request_arrays`` false) is
    not opened again. Partitioned by run date like ``ingest/parsed_runs``.
    """
    keys = list(context.partition_keys)
    with warehouse.get_connection() as conn:
        # a serve result the parse found without per-request arrays (raw_files.request_arrays false) has no
        # records to read: it is not opened again
        runs = conn.sql("select run_id, source_file, source_format, source_row, completed, failed, run_date_partition "
                        "from raw_runs as r where list_contains($keys, run_date_partition) and not ("
                        "list_contains($array_formats, source_format) and exists (select 1 from raw_files as f "
                        "where f.source_file = r.source_file and f.request_arrays is false)) "
                        "order by source_file, source_row",
                        params={"keys": keys, "array_formats": list(ARRAY_FORMATS)}).to_arrow_table().to_pylist()
        requests, sources = requests_tables(Path(paths.raw_dir), runs)
        replace_partitions(conn, "raw_requests", requests, keys)
        replace_partitions(conn, "raw_request_sources", sources, keys)
        for table in ("raw_requests", "raw_request_sources"):
            conn.execute(f"delete from {table} where run_id not in (select run_id from raw_runs)")
    reasons = Counter(r or "read" for r in sources.column("requests_reason").to_pylist())
    context.log.info(f"raw_requests: {requests.num_rows} requests of {sources.num_rows} runs {dict(reasons)}")
    return dg.MaterializeResult(metadata={
        **table_metadata(requests, preview_columns=["run_id", "request_index", "ttft_s", "tpot_s", "e2el_s",
                                                    "output_tokens", "error"]),
        "runs_with_requests": sources.num_rows,
        "outcomes": counts_markdown(dict(reasons), "per-request outcome")})
