"""Stage ``metrics``: the GPU reference table and price books (``reference``) and measured power from telemetry
logs (``power``); the metric formulas themselves are SQL (``sql/run_metrics.sql``)."""
