-- The lines of _head (sql/lineage_current_sweep_runs.sql's rows) with a new row in a sweep the line already
-- superseded: an insertion into its past (pipeline.metrics.lineage.appended_lines). One row per line.
select distinct r.line_id
from run_metrics r
join (select distinct line_id, sweep_id from _head where new) h using (line_id, sweep_id)
where r.superseded_by is not null
