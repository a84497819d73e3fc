-- What a file's parse depends on besides itself (pipeline/ingest/metadata.py): its sidecar `<name>.meta.json` and its
-- folder's runs.csv. Input: file_shas(source_file, sha256), one row per listed file. Output: each file with the
-- sha256 of both (null when there is none). A dependency of unknown content carries whatever sha256 the input
-- gives it (the caller's '<changed>' marker), so it never matches a recorded one.
select
    f.source_file,
    f.sha256,
    sidecar.sha256 as sidecar_sha256,
    manifest.sha256 as manifest_sha256
from file_shas f
left join file_shas sidecar on sidecar.source_file = f.source_file || '.meta.json'
left join file_shas manifest on manifest.source_file = regexp_replace(f.source_file, '[^/]*$', '') || 'runs.csv'
