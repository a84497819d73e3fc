-- Every run of the lines $1 (a list of line_id) with the columns validate.lines.run_lineage reads, for
-- pipeline.metrics.lineage.refresh_lineage: one row per run (run_metrics holds one per price book). The lines are
-- a semi-join on their unnested list: list_contains over a list of every line would compare each row with each line.
select distinct run_id, conc, run_date, line_id, sweep_id
from run_metrics
where line_id in (select unnest($1::varchar[]))
order by run_id
