-- Builds run_slo: one row per (validated run, SLO of slos.csv), in the run-date partitions $partition_keys.
-- Formulas: docs/metrics.md, "SLOs, attainment and goodput".
--   a request meets an SLO when it has no error and every bounded latency is known and within its bound
--   (ttft_s <= slo.ttft_s, tpot_s <= slo.tpot_s, e2el_s <= slo.e2el_s; an empty bound is no bound; an errored
--   request, or one whose bounded latency is null, fails)
--   slo_basis            'per_request' when raw_requests has the run's requests, else 'p99_summary'
--   requests             requests of the run (errored included); null on the p99 basis
--   requests_meeting_slo requests that meet the SLO; null on the p99 basis
--   slo_attainment       requests_meeting_slo / requests (fraction); null on the p99 basis
--   slo_met              per_request: slo_attainment >= slo.min_attainment;
--                        p99_summary: every bounded p99 of the run's summary within its bound (p99_ttft_s,
--                        p99_tpot_s, p99_e2el_s), null when a bounded p99 is missing
--   goodput_tok_s_per_gpu  output tokens of the requests meeting the SLO / duration_s / num_gpus (tok/s/GPU);
--                        null on the p99 basis (a summary cannot say which requests met it)
-- Grain: one row per (run, slo). num_gpus from the run_gpu_counts view (sql/run_gpu_counts.sql): every GPU of the
-- run, prefill and decode alike.
with runs as (
    select v.run_id, v.model, v.run_date, v.run_date_partition, v.duration_s, v.p99_ttft_s, v.p99_tpot_s,
           v.p99_e2el_s, c.num_gpus
    from validated_runs as v
    join run_gpu_counts as c using (run_id)
    where list_contains($partition_keys, v.run_date_partition)
),
judged as (
    select
        q.run_id,
        s.name as slo,
        q.output_tokens,
        q.error is null
            and (s.ttft_s is null or coalesce(q.ttft_s <= s.ttft_s, false))
            and (s.tpot_s is null or coalesce(q.tpot_s <= s.tpot_s, false))
            and (s.e2el_s is null or coalesce(q.e2el_s <= s.e2el_s, false)) as meets
    from raw_requests as q
    join runs as r using (run_id)
    cross join slos as s
),
per_request as (
    select
        run_id,
        slo,
        count(*) as requests,
        count(*) filter (where meets) as requests_meeting_slo,
        coalesce(sum(output_tokens) filter (where meets), 0) as good_output_tokens
    from judged
    group by run_id, slo
)
select
    r.run_id,
    r.model,
    r.run_date,
    r.run_date_partition,
    s.name as slo,
    case when p.run_id is null then 'p99_summary' else 'per_request' end as slo_basis,
    cast(p.requests as integer) as requests,
    cast(p.requests_meeting_slo as integer) as requests_meeting_slo,
    p.requests_meeting_slo / p.requests as slo_attainment,
    case
        when p.run_id is not null then p.requests_meeting_slo / p.requests >= s.min_attainment
        else (s.ttft_s is null or r.p99_ttft_s <= s.ttft_s)
            and (s.tpot_s is null or r.p99_tpot_s <= s.tpot_s)
            and (s.e2el_s is null or r.p99_e2el_s <= s.e2el_s)
    end as slo_met,
    p.good_output_tokens / r.duration_s / r.num_gpus as goodput_tok_s_per_gpu,
    s.ttft_s as slo_ttft_s,
    s.tpot_s as slo_tpot_s,
    s.e2el_s as slo_e2el_s,
    s.min_attainment as slo_min_attainment
from runs as r
cross join slos as s
left join per_request as p on p.run_id = r.run_id and p.slo = s.name
order by r.run_id, s.name
