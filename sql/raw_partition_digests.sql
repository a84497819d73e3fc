-- What the raw_logs_sensor remembers per run-date partition (pipeline/defs/automation.py): a digest of its runs
-- as ingest resolves them (every column of RUN_SCHEMA: content hash, resolved metadata and where it came from)
-- and of the power logs they name, so a changed sidecar, runs.csv or telemetry file counts, a touched one does
-- not. Inputs: runs (RUN_SCHEMA), files (FILE_SCHEMA). One row per partition.
-- hash(r) is DuckDB's row hash: deterministic, but free to change between DuckDB releases, so an upgrade may
-- make the sensor refresh every date once (md5(to_json(r)) would not, but it writes every run out as JSON first).
-- Each run is reduced to its hash and its power log's path before the join, so the join never holds whole runs
-- (runs may be a stream of record batches: the parse cache read a batch at a time).
with r as (
    select
        run_date_partition,
        source_file,
        source_row,
        hash(runs) as run_hash,
        case
            when starts_with(power_log, '/') then power_log
            else regexp_replace(source_file, '[^/]*$', '') || power_log
        end as power_path
    from runs
)
select
    r.run_date_partition as partition_key,
    sha256(string_agg(r.run_hash::varchar || coalesce(power.sha256, ''), E'\n'
                      order by r.source_file, r.source_row)) as digest
from r
left join files power on power.source_file = r.power_path
group by r.run_date_partition
