-- quarantine_scope_rows(): the quarantine rows (QUARANTINE_SCHEMA's columns) of the files and run dates that
-- quarantine_changes names, from the rejects of ingest (raw_rejects) and of the row rules (validation_rejects);
-- a night deletes the stored rows of that scope and inserts these (update_quarantine,
-- pipeline/defs/validate/assets.py). Exact because neither source changes outside the scope: ingest rewrites
-- raw_rejects per file and notes each (removed files included), validation rewrites validation_rejects per run
-- date and notes each, and drops only rows of removed files; a whole rewrite is noted as 'all'.
create or replace temp macro quarantine_scope_rows() as table
with scope_files as (select value as source_file from quarantine_changes where kind = 'file'),
scope_dates as (select value as run_date_partition from quarantine_changes where kind = 'partition')
select source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of
from raw_rejects
where source_file in (select source_file from scope_files)
    or run_date_partition in (select run_date_partition from scope_dates)
union all
select source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of
from validation_rejects
where source_file in (select source_file from scope_files)
    or run_date_partition in (select run_date_partition from scope_dates)
