-- The validated rows of the runs whose run_metrics rows have no line_id yet (just inserted), for
-- pipeline.metrics.lineage.refresh_lineage, which keeps the line and sweep columns (validate.lines.LINE_COLUMNS,
-- SWEEP_COLUMNS) and computes their line_id and sweep_id. Inputs: validated_runs, run_metrics. One row per run.
select v.*
from validated_runs v
where v.run_id in (select run_id from run_metrics where line_id is null)
order by v.run_id
