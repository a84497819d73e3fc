-- The parsed runs the failure-rate series of comparisons/regressions read (pipeline.comparisons.regressions
-- .failure_runs): every dated row of raw_runs that validation accepted, or quarantined because its requests
-- failed (failed_requests, no_completed_requests): a sweep whose requests failed is a point of its line's
-- failure-rate series although it never reaches a frontier. Rows refused for other reasons (missing metadata, a
-- unit slip) say nothing about the line's failures and are left out.
select r.*
from raw_runs r
where r.run_date is not null
  and (r.run_id in (select run_id from validated_runs)
       or exists (select 1 from validation_rejects q
                  where q.source_file = r.source_file and q.source_row is not distinct from r.source_row
                    and q.reason_code in ('failed_requests', 'no_completed_requests')))
order by r.run_date, r.source_file, r.source_row
