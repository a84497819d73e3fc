-- The scope a night rebuilds in the quarantine, and its rows (update_quarantine,
-- pipeline/defs/validate/assets.py, deletes the stored rows in scope and inserts quarantine_scope_rows()).
-- in_quarantine_scope(source_file, run_date_partition): the row's file or run date is named by
-- quarantine_changes. quarantine_scope_rows(): the quarantine rows (QUARANTINE_SCHEMA's columns) in scope, from
-- the rejects of ingest (raw_rejects) and of the row rules (validation_rejects). Exact because neither source
-- changes outside the scope: ingest rewrites raw_rejects per file and notes each (removed files included),
-- validation rewrites validation_rejects per run date and notes each, and drops only rows of removed files; a
-- whole rewrite is noted as 'all'.
create or replace temp macro in_quarantine_scope(file, run_date) as
    file in (select value from quarantine_changes where kind = 'file')
    or run_date in (select value from quarantine_changes where kind = 'partition');

create or replace temp macro quarantine_scope_rows() as table
select source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of
from raw_rejects
where in_quarantine_scope(source_file, run_date_partition)
union all
select source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of
from validation_rejects
where in_quarantine_scope(source_file, run_date_partition)
