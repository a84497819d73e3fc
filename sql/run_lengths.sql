-- Builds run_lengths: measured mean ISL/OSL of every validated run beside its nominal isl/osl (docs/metrics.md),
-- the one place the nominal-vs-measured rule lives (run_metrics and ingest_ledger read it).
--   mean_input_len / mean_output_len   total_input_tokens / completed, total_output_tokens / completed (tokens)
--   length_off_nominal                 a measured length more than 10 % off its nominal one (e.g. SGLang
--                                      random_range_ratio < 1 draws lengths below the nominal); false when either
--                                      side of a comparison is unknown. Such runs are left off frontiers.
create or replace view run_lengths as
with measured as (
    select
        run_id,
        isl,
        osl,
        total_input_tokens / nullif(completed, 0) as mean_input_len,
        total_output_tokens / nullif(completed, 0) as mean_output_len
    from validated_runs
)
select
    run_id,
    mean_input_len,
    mean_output_len,
    coalesce(abs(mean_input_len - isl) > 0.10 * isl, false)
        or coalesce(abs(mean_output_len - osl) > 0.10 * osl, false) as length_off_nominal
from measured
