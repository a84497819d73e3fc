-- Builds run_gpu_counts: GPUs each validated run used (docs/metrics.md). The same rule in Python is
-- pipeline/ingest/gpus.py (validation and parsers); tests/test_gpu_count.py holds the two equal.
--   single node: tp × pp × pcp (pp, pcp default 1); disaggregated: num_prefill_gpu + num_decode_gpu
create or replace view run_gpu_counts as
select
    run_id,
    case
        when coalesce(disagg, false) then num_prefill_gpu + num_decode_gpu
        else tp * coalesce(pp, 1) * coalesce(pcp, 1)
    end as num_gpus
from validated_runs
