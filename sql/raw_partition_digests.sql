-- What the raw_logs_sensor remembers per run-date partition (pipeline/defs/automation.py): a digest of its runs
-- as ingest resolves them (every column of RUN_SCHEMA: content hash, resolved metadata and where it came from)
-- and of the power logs they name, so a changed sidecar, runs.csv or telemetry file counts, a touched one does
-- not. Inputs: runs (RUN_SCHEMA), files (FILE_SCHEMA). One row per partition.
-- hash(r) is DuckDB's row hash: deterministic, but free to change between DuckDB releases, so an upgrade may
-- make the sensor refresh every date once (md5(to_json(r)) would not, at ten times the cost on 100,000 runs).
select
    r.run_date_partition as partition_key,
    sha256(string_agg(hash(r)::varchar || coalesce(power.sha256, ''), chr(10)
                      order by r.source_file, r.source_row)) as digest
from runs r
left join files power on power.source_file = case
    when starts_with(r.power_log, '/') then r.power_log
    else regexp_replace(r.source_file, '[^/]*$', '') || r.power_log
end
group by r.run_date_partition
