-- Sets run_metrics' line_id and sweep_id from _ids (run_id, line_id, sweep_id: the ids of the fresh runs,
-- pipeline.metrics.lineage.refresh_lineage), on every price book's row of those runs. Returns the updated count.
update run_metrics set line_id = i.line_id, sweep_id = i.sweep_id
from _ids i
where run_metrics.run_id = i.run_id
