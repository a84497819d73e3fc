-- The rows of the lines $1 (a list of line_id) with no superseded_by: each line's current sweep and its new rows
-- (lineage still null, so repeat_group is null: new), with the columns validate.lines.run_lineage reads, for
-- pipeline.metrics.lineage.appended_lines. One row per run.
select distinct run_id, conc, run_date, line_id, sweep_id, repeat_group is null as new
from run_metrics
where line_id in (select unnest($1::varchar[]))
  and superseded_by is null
order by run_id
