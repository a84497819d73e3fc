"""``sql/parse_cache_stat.sql`` on its own, over a hand-made listing and cached file table: which listed files the
parse cache trusts without reading them (git's "racy clean" rule, pipeline.ingest.parse_cache). The folder-level
tests are in test_parse_cache.py."""

import duckdb

from pipeline.io.paths import sql_text


def test_a_cached_file_is_stat_clean_only_when_size_and_mtime_match_and_the_mtime_is_before_the_racy_window():
    # racy_before = 1000 ns. a: same size and mtime, mtime 999 < 1000: clean. b: mtime exactly 1000, the window's
    # first instant: racy, read again (lookup._unchanged_since_cached counts mtime >= racy_before as racy too).
    # c: size changed. d: mtime changed. e: not cached. f: listed without a size (not a regular file).
    conn = duckdb.connect()
    conn.execute("""
    create table listing as select * from (values
        ('a.json', 0, 10, 999), ('b.json', 1, 10, 1000), ('c.json', 2, 11, 500), ('d.json', 3, 10, 501),
        ('e.json', 4, 10, 500), ('f', 5, null, null)
    ) t(source_file, position, size_bytes, mtime_ns);
    create table cached_files as select * from (values
        ('a.json', 10, 999, 'sa'), ('b.json', 10, 1000, 'sb'), ('c.json', 10, 500, 'sc'), ('d.json', 10, 500, 'sd')
    ) t(source_file, size_bytes, mtime_ns, sha256);
    """)
    rows = conn.execute(sql_text("parse_cache_stat"), {"racy_before": 1000}).fetchall()
    # position, source_file, regular_file, cached, stat_clean, cached_sha256; in listing order
    assert rows == [(0, "a.json", True, True, True, "sa"), (1, "b.json", True, True, False, "sb"),
                    (2, "c.json", True, True, False, "sc"), (3, "d.json", True, True, False, "sd"),
                    (4, "e.json", True, False, False, None), (5, "f", False, False, False, None)]
