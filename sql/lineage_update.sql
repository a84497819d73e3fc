-- Sets run_metrics' derived lineage columns (superseded_by, repeat_group, repeat_n) to _lineage's
-- (validate.lines.run_lineage's output, one row per run) on the rows where they differ, for
-- pipeline.metrics.lineage.refresh_lineage (sql/lineage_changed_partitions.sql names their partitions first).
-- line_id and sweep_id are set before (sql/lineage_fill_ids.sql). Rows already equal are left as they are.
update run_metrics set superseded_by = l.superseded_by, repeat_group = l.repeat_group, repeat_n = l.repeat_n
from _lineage l
where run_metrics.run_id = l.run_id
  and (run_metrics.superseded_by is distinct from l.superseded_by
       or run_metrics.repeat_group is distinct from l.repeat_group
       or run_metrics.repeat_n is distinct from l.repeat_n)
