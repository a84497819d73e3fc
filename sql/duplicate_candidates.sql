-- Accepted runs of other run-date partitions that could be a duplicate of a run in $partition_keys
-- (pipeline.validate.rules.find_duplicates): the same content (content_sha256), or the same model, GPU and conc
-- with median TPOT equal within $rtol relative (math.isclose's test), which every same-measurement duplicate
-- has (rules.same_measurement requires median TPOT among its equal numbers). Model, GPU and conc enter the line
-- key verbatim, so no candidate is missed; the rest of the history is not read into Python.
-- Input: _batch (the raw runs of $partition_keys, registered by the validated_runs asset).
--
-- The TPOT test is joined on buckets of ln|TPOT| $bucket_width wide (e.g. 1e-6, a thousand times $rtol): two
-- values within $rtol relative have logarithms of their magnitudes about $rtol apart at most, so they sit in the same
-- bucket or adjacent ones, and each batch run is joined to its own bucket and both neighbours. A join on model,
-- GPU and conc alone would pair every batch run with every accepted run of its model, GPU and conc. Zero, NaN and
-- infinite TPOTs have no bucket: rows with one on either side go through the plain test (none pass the row rules;
-- kept so the result is the plain test's exactly).
-- The tests run on a few columns and name rows by rowid; only the chosen rows are read whole (reading every column
-- of every accepted run just to filter them would be most of the work).
with keyed_batch as (
    select content_sha256, {'model': model, 'hw': hw, 'conc': conc} as line_key, median_tpot_s,
           case when isfinite(median_tpot_s) and median_tpot_s <> 0
                then floor(ln(abs(median_tpot_s)) / $bucket_width)::bigint end as tpot_bucket
    from _batch
),
history as (
    select rowid as row_at, content_sha256, {'model': model, 'hw': hw, 'conc': conc} as line_key, median_tpot_s,
           case when isfinite(median_tpot_s) and median_tpot_s <> 0
                then floor(ln(abs(median_tpot_s)) / $bucket_width)::bigint end as tpot_bucket
    from validated_runs
    -- outside the batch's dates: when the batch is every date (a nightly full refresh) the joins are then empty,
    -- instead of every accepted run against every batch run of its model, GPU and conc
    where not list_contains($partition_keys, run_date_partition)
),
near_batch as (  -- each bucketed batch run under its bucket and both neighbours
    select line_key, median_tpot_s, unnest([tpot_bucket - 1, tpot_bucket, tpot_bucket + 1]) as near_bucket
    from keyed_batch
    where tpot_bucket is not null
),
pairs as (  -- (accepted run, batch run) of one model, GPU and conc (null equal to null) that may be within $rtol
    select o.row_at, o.median_tpot_s as accepted_tpot, b.median_tpot_s as batch_tpot
    from history as o
    join near_batch as b on b.line_key is not distinct from o.line_key and b.near_bucket = o.tpot_bucket
    union all
    select o.row_at, o.median_tpot_s, b.median_tpot_s
    from history as o
    join keyed_batch as b on b.line_key is not distinct from o.line_key
    where b.tpot_bucket is null or o.tpot_bucket is null
),
candidates as (
    select row_at
    from history
    where content_sha256 in (select content_sha256 from keyed_batch where content_sha256 is not null)
    union
    select row_at
    from pairs
    where abs(batch_tpot - accepted_tpot) <= $rtol * greatest(abs(batch_tpot), abs(accepted_tpot))
)
select e.*
from validated_runs as e
where e.rowid in (select row_at from candidates)
order by e.rowid
