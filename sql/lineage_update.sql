-- Sets run_metrics' derived lineage columns (superseded_by, repeat_group, repeat_n) to _lineage's
-- (validate.lines.run_lineage's output, one row per run, every run of the lines being recomputed), for
-- pipeline.metrics.lineage.refresh_lineage (sql/lineage_changed_partitions.sql names the partitions whose rows
-- change, first). Every row of those runs is set, equal or not: a night's _lineage holds its lines' current sweeps
-- and new runs, and a full refresh changes every row anyway. line_id and sweep_id are set before
-- (sql/lineage_fill_ids.sql).
update run_metrics set superseded_by = l.superseded_by, repeat_group = l.repeat_group, repeat_n = l.repeat_n
from _lineage l
where run_metrics.run_id = l.run_id
