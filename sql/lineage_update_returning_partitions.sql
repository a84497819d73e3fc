-- Sets run_metrics' derived lineage columns (superseded_by, repeat_group, repeat_n) to _lineage's
-- (validate.lines.run_lineage's output, one row per run) on the rows where they differ, and returns the
-- run_date_partition of every row it changed (one per changed row: a run has a row per price book), for
-- pipeline.metrics.lineage.refresh_lineage. line_id and sweep_id are set before (sql/lineage_fill_ids.sql); a new
-- row's repeat_group is still null, so it is among the changed.
update run_metrics set superseded_by = l.superseded_by, repeat_group = l.repeat_group, repeat_n = l.repeat_n
from _lineage l
where run_metrics.run_id = l.run_id
  and (run_metrics.superseded_by is distinct from l.superseded_by
       or run_metrics.repeat_group is distinct from l.repeat_group
       or run_metrics.repeat_n is distinct from l.repeat_n)
returning run_metrics.run_date_partition
