"""Ingest stage: raw engine logs → the normalized ``raw_runs`` table."""


from collections import Counter
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from dagster_duckdb import DuckDBResource

from pipeline.defs.partitions import RUN_DATE_PARTITIONS, SINGLE_RUN
from pipeline.defs.resources import WAREHOUSE_POOL, PipelinePaths
from pipeline.defs.ui import counts_markdown, table_metadata
from pipeline.ingest.folder import ingest_folder_cached
from pipeline.ingest.input_loss import DEFAULT_MAX_RUN_LOSS_SHARE, check_input_loss
from pipeline.ingest.parse import IngestResult
from pipeline.io.storage import replace_partitions, write_table


class IngestConfig(dg.Config):
    """Run config of ``ingest/parsed_runs``: how much input a scan may lose before the run stops unpublished."""

    allow_shrink: bool = False
    max_run_loss_share: float = DEFAULT_MAX_RUN_LOSS_SHARE


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
    ``ingest``) and ``raw_files`` (one row per file: kind, size, sha256, rows read), which are per file, not per
    date; rows of files that no longer exist are dropped from every partition.

    Only files that changed since the last scan are parsed (``pipeline.ingest.parse_cache``: content hashes of the file,
    its sidecar and its runs.csv); the rest come from the parse cache, with identical rows.

    Fails closed, before writing anything (``pipeline.ingest.input_loss``): a missing, unreadable or empty raw
    folder, or a scan with more than ``max_run_loss_share`` (run config, default 20 %) fewer runs than the last
    one, raises with a one-line cause and every mart stays as it was; ``allow_shrink: true`` accepts a
    deliberate shrink.
    """
    keys = list(context.partition_keys)
    result, cache = ingest_folder_cached(Path(paths.raw_dir), Path(paths.cache_dir))
    mine = result.runs.filter(pc.is_in(result.runs["run_date_partition"], pa.array(keys)))
    with warehouse.get_connection() as conn:
        known = conn.execute("select count(*) from information_schema.tables where table_name = 'raw_runs'").fetchall()
        previous = conn.execute("select count(*) from raw_runs").fetchall()[0][0] if known[0][0] else None
        check_input_loss(Path(paths.raw_dir), result, previous, config.max_run_loss_share, config.allow_shrink)
        replace_partitions(conn, "raw_runs", mine, keys)
        conn.register("_files", result.files)
        conn.execute("delete from raw_runs where source_file not in (select source_file from _files)")
        conn.unregister("_files")
        write_table(conn, "raw_rejects", result.rejects)
        write_table(conn, "raw_files", result.files)
    result = IngestResult(runs=mine, rejects=result.rejects, files=result.files)
    context.log.info(
        f"{result.files.num_rows} files ({cache.parsed} parsed, {cache.reused} from the parse cache): "
        f"{result.runs.num_rows} runs in {keys[:3]}{'…' if len(keys) > 3 else ''}, "
        f"{result.rejects.num_rows} rejected rows")
    formats = Counter(result.runs.column("source_format").to_pylist())
    kinds = Counter(result.files.column("kind").to_pylist())
    return dg.MaterializeResult(
        metadata={
            **table_metadata(result.runs, preview_columns=["source_file", "source_format", "model", "hw",
                                                            "precision", "spec_decoding", "conc"]),
            "raw_dir": dg.MetadataValue.path(paths.raw_dir),
            "files_scanned": result.files.num_rows,
            "files_parsed": cache.parsed,
            "files_from_parse_cache": cache.reused,
            "rows_rejected_at_ingest": result.rejects.num_rows,
            "runs_by_format": counts_markdown(dict(formats), "source_format"),
            "files_by_kind": counts_markdown(dict(kinds), "kind"),
        }
    )
