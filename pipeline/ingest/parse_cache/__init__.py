"""The parse cache, so a run parses only the files that changed since the last scan (``load_cache`` →
``look_up`` → ``merge_in_scan_order`` → ``save_cache``, in that order in ``pipeline.ingest.folder``).

What a file gives (its runs, rejects and ledger row) depends on its own bytes, its sidecar ``<name>.meta.json``,
its folder's ``runs.csv`` and the parser code, nothing else (power logs are read later, by ``run_power``). The
cache records, per file (key: path relative to the raw folder), those rows with the sha256 of the file, of its
sidecar and of its manifest as they were when parsed. A file is reused when all three are unchanged and
``parser_version()`` (a hash of the parsing code and the GPU tables) is the same; anything else is parsed again.

A file's sha256 is taken from the cache without reading the file when its size and ``st_mtime_ns`` are the cached
ones and its mtime is older than the cached scan by more than ``RACY_WINDOW_NS`` (git's "racy clean" rule: a file
written in the same instant as the scan could change again without its mtime moving); otherwise it is hashed.
A touched but unchanged file is therefore hashed, never re-parsed.

The cache is a base of three Arrow IPC files (``files``, ``runs``, ``rejects``) under ``cache_dir``, each written
atomically, uncompressed and stamped with one generation id (read memory-mapped: loading it copies nothing), and a delta beside it (``delta.*``: the rows of the files parsed
since the base and which base files they replace), so a night's save writes the night's rows, not the
history's (``save_cache``). Beside them, the scan they were saved from (``listing`` and ``folders``, for the
sensor's quick scan). A reader that finds a base of mixed generations (two writers at once, a writer killed
between files), another raw folder or another parser version ignores the cache and parses everything; a torn
delta is ignored and the base alone read (an older state: what changed since is parsed again). So the cache can
only cost time, never change a result: ``ingest_folder_cached`` returns exactly what ``ingest_folder`` does
(tested by content hash).

The package, by concern:

- ``store``: the files' schemas and stamps, the parser version a cache is valid for, atomic writes and mapped reads;
- ``listing``: the saved scan the sensor's quick scan starts from;
- ``lookup``: which files to parse, which cached rows to reuse, and the merge back into scan order;
- ``save``: a new base or a delta on the current one;
- ``load``: the current state (base plus delta) and its recorded changes;
- ``stream``: the state's runs a record batch at a time;
- ``rows``: finding and slicing one file's rows in a cache table.
"""

from pipeline.ingest.parse_cache.listing import SCAN_COLUMNS, listing_table, load_scan, moved_entries
from pipeline.ingest.parse_cache.load import cache_generation, load_cache, load_changes
from pipeline.ingest.parse_cache.lookup import Lookup, cache_changes, file_dependencies, look_up, merge_in_scan_order
from pipeline.ingest.parse_cache.save import DELTA_MAX_SHARE, save_cache
from pipeline.ingest.parse_cache.store import (
    CACHE_FILE_SCHEMA,
    DELTA_PREFIX,
    MAX_CACHE_CHUNKS,
    RACY_WINDOW_NS,
    Cache,
    CacheChanges,
    CacheStats,
    parser_version,
)
from pipeline.ingest.parse_cache.stream import CacheStream, stream_cache

__all__ = [
    "CACHE_FILE_SCHEMA",
    "Cache",
    "CacheChanges",
    "CacheStats",
    "CacheStream",
    "DELTA_MAX_SHARE",
    "DELTA_PREFIX",
    "Lookup",
    "MAX_CACHE_CHUNKS",
    "RACY_WINDOW_NS",
    "SCAN_COLUMNS",
    "cache_changes",
    "cache_generation",
    "file_dependencies",
    "listing_table",
    "load_cache",
    "load_changes",
    "load_scan",
    "look_up",
    "merge_in_scan_order",
    "moved_entries",
    "parser_version",
    "save_cache",
    "stream_cache",
]
