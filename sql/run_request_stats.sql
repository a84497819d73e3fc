-- Builds run_request_stats: per-run statistics of the per-request records (raw_requests, pipeline/ingest/requests.py),
-- one row per (run, run-date partition) with at least one request that counts. Read by sql/run_metrics.sql.
-- Formulas: docs/metrics.md section 4a.
--   e2e_norm_intvty_p90   1 / p90 over the run's requests of (e2el_s / output_tokens), tok/s/user: InferenceX's
--                         E2E-normalized interactivity, computed as InferenceX computes it from AIPerf's records
--                         (utils/agentic/aggregation/request_metrics.py): over the successful requests (error null)
--                         whose latency and output length are positive, the percentile linearly interpolated
--                         between closest ranks (aggregation_common.percentile: k = (n − 1) · 0.9), which is
--                         quantile_cont here and numpy.percentile's default
--   e2e_norm_requests     the requests that statistic is over
-- Grain: one row per run with such requests; runs without records have none (their x-axis comes from the row).
create or replace view run_request_stats as
select
    run_id,
    run_date_partition,
    1 / quantile_cont(e2el_s / output_tokens, 0.9) as e2e_norm_intvty_p90,
    count(*) as e2e_norm_requests
from raw_requests
where error is null and output_tokens > 0 and e2el_s > 0
group by run_id, run_date_partition
