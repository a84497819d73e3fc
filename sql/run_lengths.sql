-- Builds run_lengths: measured ISL/OSL of every validated run beside the lengths its nominal isl/osl and declared
-- random_range_ratio imply (docs/metrics.md section 5), the one place the length rule lives (run_metrics, the
-- ingest ledger and the duplicate rule's keep order read it; the validate stage runs this file over its candidate
-- rows in an in-memory DuckDB, pipeline/validate/lengths.py).
--   mean_input_len / mean_output_len   total_input_tokens / completed, total_output_tokens / completed (tokens)
--   latency_output_len                 without token totals: (median E2EL − median TTFT) / median TPOT + 1, the
--                                      output length a median request's latencies imply (tokens)
--   expected_input_len / _output_len   isl · (1 + r) / 2, osl · (1 + r) / 2 with r = random_range_ratio (null:
--                                      1.0). SGLang and InferenceX draw lengths uniformly in [r·n, n], so
--                                      InferenceX's RANDOM_RANGE_RATIO 0.8 has mean 0.9·n, not n.
--   length_check                       how the lengths were checked: 'totals', 'latencies' (OSL only), or
--                                      'unverified' (a fixed-sequence run with neither); null without isl/osl
--   length_off_nominal                 a measured length more than 10 % off its expected mean, a latency-implied
--                                      OSL more than 25 % off (medians of different requests, so a looser bound),
--                                      or lengths that could not be checked (length_check 'unverified'): the run
--                                      is not shown to have run its nominal workload, so it is kept, flagged and
--                                      left off frontiers by default.
create or replace view run_lengths as
with measured as (
    select
        run_id,
        isl,
        osl,
        total_input_tokens / nullif(completed, 0) as mean_input_len,
        total_output_tokens / nullif(completed, 0) as mean_output_len,
        case when total_output_tokens is null and median_tpot_s > 0 and median_e2el_s >= median_ttft_s
             then (median_e2el_s - median_ttft_s) / median_tpot_s + 1 end as latency_output_len,
        isl * (1 + coalesce(random_range_ratio, 1.0)) / 2 as expected_input_len,
        osl * (1 + coalesce(random_range_ratio, 1.0)) / 2 as expected_output_len
    from validated_runs
),
checked as (
    select
        *,
        case
            when isl is null and osl is null then null
            when mean_input_len is not null or mean_output_len is not null then 'totals'
            when latency_output_len is not null then 'latencies'
            else 'unverified'
        end as length_check
    from measured
)
select
    run_id,
    mean_input_len,
    mean_output_len,
    latency_output_len,
    expected_input_len,
    expected_output_len,
    length_check,
    coalesce(length_check = 'unverified', false)
        or coalesce(abs(mean_input_len - expected_input_len) > 0.10 * expected_input_len, false)
        or coalesce(abs(mean_output_len - expected_output_len) > 0.10 * expected_output_len, false)
        or coalesce(abs(latency_output_len - expected_output_len) > 0.25 * expected_output_len, false)
        as length_off_nominal
from checked
