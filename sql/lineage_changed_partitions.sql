-- The run_date_partition of every run_metrics row whose derived lineage columns (superseded_by, repeat_group,
-- repeat_n) differ from _lineage's (validate.lines.run_lineage's output, one row per run), once each and in order,
-- for pipeline.metrics.lineage.refresh_lineage: the partitions whose runs/ files must be rewritten. Read before
-- sql/lineage_update.sql sets them. A new row's repeat_group is still null, so it is among the changed. One row per
-- partition (a full refresh changes every row: a row per changed row would be millions).
select distinct run_metrics.run_date_partition
from run_metrics
join _lineage l using (run_id)
where run_metrics.superseded_by is distinct from l.superseded_by
   or run_metrics.repeat_group is distinct from l.repeat_group
   or run_metrics.repeat_n is distinct from l.repeat_n
order by 1
