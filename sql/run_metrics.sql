-- Builds run_metrics: one row per validated run, with per-GPU throughput, interactivity, $/M tokens, tok/s/MW, J/token.
-- Formulas: docs/metrics.md, following InferenceX utils/process_result.py and the dashboard.
--   num_gpus            from the run_gpu_counts view (sql/run_gpu_counts.sql)
--   mean_input_len, mean_output_len, latency_output_len, expected_*_len, length_check, length_off_nominal
--                       from the run_lengths view (sql/run_lengths.sql)
--   tput_per_gpu        total tok/s / num_gpus (InferenceX rows: their reported per-GPU value)
--   output_tput_per_gpu output tok/s / num_gpus (disaggregated: / num_decode_gpu)
--   input_tput_per_gpu  (total − output) tok/s / num_gpus (disaggregated: / num_prefill_gpu)
--   *_intvty            carried from the parser: 1000 / *_tpot_ms from the file's own ms value (1 / *_tpot_s when
--                       the file gives seconds), the dashboard's arithmetic bit for bit; never from ITL
--   x_intvty            frontier x: median_intvty (fixed_seq; e2e_norm_intvty_p90 for a run without TPOT, LLMPerf),
--                       e2e_norm_intvty_p90 (agentic_traces), else for an agentic run without it the stand-in
--                       mean_osl_over_p90_e2el (docs/metrics.md section 4a)
--   x_intvty_stat       the statistic x_intvty holds, named by its column: median_intvty, e2e_norm_intvty_p90 or
--                       mean_osl_over_p90_e2el (frontiers and comparisons never mix two)
--   e2e_norm_intvty_p90 the row's own (InferenceX dashboard) value, else 1 / p90(E2EL / OSL) over the run's
--                       per-request records (run_request_stats view, sql/run_request_stats.sql), any benchmark type;
--                       e2e_norm_intvty_source names which (dashboard:p90_e2e_norm_intvty, requests:p90(e2el/osl))
--   cost_per_mtok_<t>   $/GPU-h / (tok/s/GPU × 3600 / 1e6)
--   tok_s_per_mw        tok/s/GPU × 1000 / power_kw;  j_per_token = power_kw × 1000 / tok/s/GPU
--   measured_*          from run_power (integrated telemetry, W per GPU): tok/s/MW = tok/s/GPU × 1e6 / W,
--                       J/token = W / tok/s/GPU, J/output token = W × GPUs / output tok/s
--   line_id … repeat_n  null here: the latest-run rule needs every date's runs of a line, so the run_metrics asset
--                       fills them after this insert for the lines it touched (pipeline/metrics/lineage.py); sweep_id is
--                       the lineage's (gha:<workflow run>, sweep:<metadata sweep_id>, date:<run_date>), which
--                       replaces the metadata key of that name
-- Grain: one row per (run, price book); price_books holds each scenario's power and $/GPU-h per GPU.
-- Parameter $partition_keys: the run-date partitions to compute (the asset deletes them, then inserts this).
-- Unordered: the table's row order is not kept anyway (a batch's rows go after the history's); every reader that
-- needs an order asks for it, and the runs/ mart is written sorted.
with gpus as (
    select v.*, c.num_gpus
    from validated_runs as v
    join run_gpu_counts as c using (run_id)
    where list_contains($partition_keys, v.run_date_partition)
),
request_stats as (
    -- 1 / p90(E2EL / OSL) from the per-request records of the runs that have them
    select run_id, e2e_norm_intvty_p90
    from run_request_stats
    where list_contains($partition_keys, run_date_partition)
),
per_gpu as (
    select
        g.*,
        coalesce(g.total_tput_tok_s / g.num_gpus, g.reported_tput_per_gpu) as tput_per_gpu,
        coalesce(
            g.output_tput_tok_s / (case when coalesce(g.disagg, false) then g.num_decode_gpu else g.num_gpus end),
            g.reported_output_tput_per_gpu
        ) as output_tput_per_gpu,
        coalesce(
            g.input_tput_tok_s / (case when coalesce(g.disagg, false) then g.num_prefill_gpu else g.num_gpus end),
            g.reported_input_tput_per_gpu
        ) as input_tput_per_gpu
    from gpus as g
)
select
    p.* exclude (reported_tput_per_gpu, reported_output_tput_per_gpu, reported_input_tput_per_gpu,
                reported_median_intvty, reported_avg_power_w_per_gpu, reported_energy_j,
                mean_intvty, median_intvty, p90_intvty, p99_intvty, sweep_id)
        replace (coalesce(p.e2e_norm_intvty_p90, q.e2e_norm_intvty_p90) as e2e_norm_intvty_p90,
                 case when p.e2e_norm_intvty_p90 is not null then p.e2e_norm_intvty_source
                      when q.e2e_norm_intvty_p90 is not null then 'requests:p90(e2el/osl)'
                 end as e2e_norm_intvty_source),
    p.mean_intvty,
    p.median_intvty,
    p.p90_intvty,
    p.p99_intvty,
    -- the frontier's x-axis: median interactivity for fixed-sequence runs, E2E-normalized interactivity
    -- (1 / p90(E2EL / OSL), tok/s/user) for agentic-trace runs, which have no fixed OSL to divide by; an agentic
    -- run with neither the dashboard's value nor per-request records is drawn on the stand-in mean OSL / p90
    -- E2EL, and x_intvty_stat says so
    -- A fixed-sequence run whose harness measures no TPOT (LLMPerf) is placed by its E2E-normalized interactivity.
    case when p.benchmark_type = 'agentic_traces'
         then coalesce(p.e2e_norm_intvty_p90, q.e2e_norm_intvty_p90, p.mean_osl_over_p90_e2el)
         else coalesce(p.median_intvty, p.e2e_norm_intvty_p90) end as x_intvty,
    -- (null when x_intvty is null; a branch added to x_intvty needs its statistic here)
    case when p.benchmark_type is distinct from 'agentic_traces'
              then case when p.median_intvty is not null then 'median_intvty'
                        when p.e2e_norm_intvty_p90 is not null then 'e2e_norm_intvty_p90' end
         when coalesce(p.e2e_norm_intvty_p90, q.e2e_norm_intvty_p90) is not null then 'e2e_norm_intvty_p90'
         when p.mean_osl_over_p90_e2el is not null then 'mean_osl_over_p90_e2el'
    end as x_intvty_stat,
    l.mean_input_len,
    l.mean_output_len,
    l.latency_output_len,
    l.expected_input_len,
    l.expected_output_len,
    l.length_check,
    l.length_off_nominal,
    coalesce(p.failed, 0) / nullif(coalesce(p.failed, 0) + p.completed, 0) as failure_rate,
    r.price_book,
    r.price_book_version,
    r.power_kw,
    r.hyperscaler_usd_per_gpu_hour,
    r.neocloud_usd_per_gpu_hour,
    r.rental_usd_per_gpu_hour,
    r.hyperscaler_usd_per_gpu_hour / (p.tput_per_gpu * 3600 / 1e6) as cost_per_mtok_hyperscaler,
    r.neocloud_usd_per_gpu_hour / (p.tput_per_gpu * 3600 / 1e6) as cost_per_mtok_neocloud,
    r.rental_usd_per_gpu_hour / (p.tput_per_gpu * 3600 / 1e6) as cost_per_mtok_rental,
    r.hyperscaler_usd_per_gpu_hour / nullif(p.input_tput_per_gpu * 3600 / 1e6, 0) as input_cost_per_mtok_hyperscaler,
    r.neocloud_usd_per_gpu_hour / nullif(p.input_tput_per_gpu * 3600 / 1e6, 0) as input_cost_per_mtok_neocloud,
    r.rental_usd_per_gpu_hour / nullif(p.input_tput_per_gpu * 3600 / 1e6, 0) as input_cost_per_mtok_rental,
    r.hyperscaler_usd_per_gpu_hour / nullif(p.output_tput_per_gpu * 3600 / 1e6, 0) as output_cost_per_mtok_hyperscaler,
    r.neocloud_usd_per_gpu_hour / nullif(p.output_tput_per_gpu * 3600 / 1e6, 0) as output_cost_per_mtok_neocloud,
    r.rental_usd_per_gpu_hour / nullif(p.output_tput_per_gpu * 3600 / 1e6, 0) as output_cost_per_mtok_rental,
    p.tput_per_gpu * 1000 / r.power_kw as tok_s_per_mw,
    r.power_kw * 1000 / p.tput_per_gpu as j_per_token,
    w.power_source,
    w.window_source,
    w.power_valid,
    w.power_invalid_reason,
    w.energy_j,
    w.avg_power_w_per_gpu,
    p.tput_per_gpu * 1e6 / w.avg_power_w_per_gpu as measured_tok_s_per_mw,
    w.avg_power_w_per_gpu / p.tput_per_gpu as measured_j_per_token,
    w.avg_power_w_per_gpu * p.num_gpus / nullif(
        p.output_tput_per_gpu * (case when coalesce(p.disagg, false) then p.num_decode_gpu else p.num_gpus end), 0
    ) as measured_j_per_output_token,
    cast(null as varchar) as line_id,
    cast(null as varchar) as sweep_id,
    cast(null as varchar) as superseded_by,
    cast(null as varchar) as repeat_group,
    cast(null as integer) as repeat_n
from per_gpu as p
join price_books as r on r.hw = p.hw
left join run_power as w using (run_id)
left join request_stats as q using (run_id)
join run_lengths as l using (run_id)
