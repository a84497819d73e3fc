-- Builds ingest_ledger: one row per file found under the raw dir, with where each of its rows ended.
-- Invariant (checked by the every_file_accounted_for asset check):
--   rows_read = accepted_rows + quarantined_rows + pending_rows.
-- pending_rows: runs of the file dated in a run-date partition no run has ingested yet (the sensor starts one run
-- per changed date; while the first runs, the other dates' new files are pending). Zero after a full refresh and
-- once every requested run has finished.
-- length_off_nominal_rows: accepted runs flagged length_off_nominal by sql/run_lengths.sql (lengths off the mean
-- their nominal ISL/OSL and range ratio imply, or unverified); they are kept, flagged, and left off frontiers.
-- ingest_ledger_rows_in(scoped): every file's row (scoped = false; the ingest_ledger asset stores them whole), or
-- only the rows of the files in the temp table ledger_scope (scoped = true; a night rebuilds the files that
-- raw_changes names, pipeline/defs/validate/ledger.py). A table macro, not a view: a filter on a view's result
-- would aggregate every file's runs first, then keep a night's few; the constant `scoped` drops the scope's
-- filters from a whole rebuild's plan.
create temp table if not exists ledger_scope (source_file varchar);
create or replace temp macro ingest_ledger_rows_in(scoped) as table
with accepted as (
    select
        v.source_file,
        count(*) as accepted_rows,
        count(*) filter (where l.length_off_nominal) as length_off_nominal_rows
    from validated_runs as v
    join run_lengths as l using (run_id)
    where not scoped or v.source_file in (select source_file from ledger_scope)
    group by v.source_file
),
ingested as (
    select source_file, count(*) as ingested_rows
    from (select source_file from raw_runs union all select source_file from raw_rejects)
    where not scoped or source_file in (select source_file from ledger_scope)
    group by source_file
),
quarantined as (
    select source_file, count(*) as quarantined_rows, list(distinct reason_code order by reason_code) as reason_codes
    from quarantine
    where not scoped or source_file in (select source_file from ledger_scope)
    group by source_file
)
select
    f.source_file,
    f.sha256 as content_sha256,
    f.size_bytes,
    f.kind,
    f.source_format,
    f.rows_read,
    coalesce(a.accepted_rows, 0) as accepted_rows,
    coalesce(a.length_off_nominal_rows, 0) as length_off_nominal_rows,
    coalesce(q.quarantined_rows, 0) as quarantined_rows,
    coalesce(q.reason_codes, []) as reason_codes,
    f.rows_read - coalesce(i.ingested_rows, 0) as pending_rows,
    case
        when f.rows_read > coalesce(i.ingested_rows, 0) then 'pending'
        when coalesce(a.accepted_rows, 0) > 0 and coalesce(q.quarantined_rows, 0) = 0 then 'accepted'
        when coalesce(a.accepted_rows, 0) > 0 then 'partially_accepted'
        when f.kind not in ('run_log', 'unreadable', 'unrecognized', 'symlinked_folder', 'refused') then 'not_a_run_log'
        else 'quarantined'
    end as outcome
from raw_files as f
left join accepted as a using (source_file)
left join quarantined as q using (source_file)
left join ingested as i using (source_file)
where not scoped or f.source_file in (select source_file from ledger_scope)
