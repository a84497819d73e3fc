-- Which listed files' content the parse cache already knows without reading them (pipeline/ingest/parse_cache/lookup.py).
-- Inputs: listing(source_file, position, size_bytes, mtime_ns) from the scan, cached_files (CACHE_FILE_SCHEMA).
-- A cached sha256 is trusted when size and mtime_ns are unchanged and the mtime is older than the cached scan by
-- more than the racy window ($racy_before, ns): git's "racy clean" rule. One row per listed file, in scan order.
select
    l.position,
    l.source_file,
    l.size_bytes is not null as regular_file,
    c.source_file is not null as cached,
    coalesce(c.size_bytes = l.size_bytes and c.mtime_ns = l.mtime_ns and l.mtime_ns < $racy_before, false)
        as stat_clean,
    c.sha256 as cached_sha256
from listing l
left join cached_files c using (source_file)
order by l.position
