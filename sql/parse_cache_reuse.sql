-- Files whose cached rows are still what parsing them would give (pipeline/ingest/parse_cache/lookup.py): the file, its
-- sidecar and its runs.csv have the content they had when it was parsed. Inputs: current_dependencies
-- (parse_cache.file_dependencies over today's known contents), cached_files (CACHE_FILE_SCHEMA).
select d.source_file
from current_dependencies d
join cached_files c using (source_file)
where d.sha256 = c.sha256
  and d.sidecar_sha256 is not distinct from c.sidecar_sha256
  and d.manifest_sha256 is not distinct from c.manifest_sha256
