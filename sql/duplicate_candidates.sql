-- Accepted runs of other run-date partitions that could be a duplicate of a run in $partition_keys
-- (pipeline.validate.rules.find_duplicates): the same content (content_sha256), or the same model, GPU and conc
-- with median TPOT equal within $rtol relative (math.isclose's test), which every same-measurement duplicate
-- has (rules.same_measurement requires median TPOT among its equal numbers). Model, GPU and conc enter the line
-- key verbatim, so no candidate is missed; the rest of the history is not read into Python.
-- Input: _batch (the raw runs of $partition_keys, registered by the validated_runs asset).
with batch as (
    select content_sha256, model, hw, conc, median_tpot_s from _batch
)
select e.*
from validated_runs as e
where not list_contains($partition_keys, e.run_date_partition)
  and (
    e.content_sha256 in (select content_sha256 from batch where content_sha256 is not null)
    or e.run_id in (
        select o.run_id
        from validated_runs as o
        join batch as b
          on b.model is not distinct from o.model
         and b.hw is not distinct from o.hw
         and b.conc is not distinct from o.conc
        -- outside the batch's dates here too: when the batch is every date (a nightly full refresh) the join
        -- is then empty, instead of every accepted run against every batch run of its model, GPU and conc
        -- (43 s onto a million runs, for no row)
        where not list_contains($partition_keys, o.run_date_partition)
          and abs(b.median_tpot_s - o.median_tpot_s)
              <= $rtol * greatest(abs(b.median_tpot_s), abs(o.median_tpot_s))
    )
  )
