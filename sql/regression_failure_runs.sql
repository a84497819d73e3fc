-- The parsed runs the failure-rate series of comparisons/regressions read (pipeline.comparisons.regressions
-- .failure_runs): every dated row of raw_runs that validation accepted, or quarantined because its requests
-- failed (failed_requests, no_completed_requests): a sweep whose requests failed is a point of its line's
-- failure-rate series although it never reaches a frontier. Rows refused for other reasons (missing metadata, a
-- unit slip) say nothing about the line's failures and are left out. The columns are the ones failure_runs reads
-- (its FAILURE_INPUT_COLUMNS): the line and sweep id columns, the series' keys and links, the request counts.
select r.run_id, r.model, r.isl, r.osl, r.hw, r.framework, r.precision, r.spec_decoding, r.tp, r.pp, r.pcp,
       r.ep, r.dp_attention, r.disagg, r.is_multinode, r.prefill_tp, r.prefill_ep, r.prefill_dp_attention,
       r.prefill_num_workers, r.decode_num_workers, r.num_prefill_gpu, r.num_decode_gpu, r.benchmark_type,
       r.kv_offload, r.run_url, r.sweep_id, r.run_date, r.conc, r.source_file, r.failed, r.completed
from raw_runs r
where r.run_date is not null
  and (r.run_id in (select run_id from validated_runs)
       or exists (select 1 from validation_rejects q
                  where q.source_file = r.source_file and q.source_row is not distinct from r.source_row
                    and q.reason_code in ('failed_requests', 'no_completed_requests')))
order by r.run_date, r.source_file, r.source_row
