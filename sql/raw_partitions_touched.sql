-- The run-date partitions whose digest (sql/raw_partition_digests.sql) can have moved when the files in
-- `touched` changed (parsed again, new or gone): the partitions of runs from those files, and of runs whose power
-- log is one of them (resolved as raw_partition_digests.sql resolves it). The partitions of the gone files' old
-- runs come from the parse cache (pipeline.ingest.parse_cache.CacheChanges), not from here.
-- Inputs: runs (RUN_SCHEMA), touched (source_file). One row per partition.
select distinct r.run_date_partition as partition_key
from runs r
where r.source_file in (select source_file from touched)
   or (r.power_log is not null and case
           when starts_with(r.power_log, '/') then r.power_log
           else regexp_replace(r.source_file, '[^/]*$', '') || r.power_log
       end in (select source_file from touched))
