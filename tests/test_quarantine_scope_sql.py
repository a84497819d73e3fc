"""``sql/quarantine_scope_rows.sql`` on its own, over hand-made warehouse tables: the scope a night rebuilds in the
quarantine is every row whose file or run date ``quarantine_changes`` names, from both sources (ingest's
``raw_rejects``, the row rules' ``validation_rejects``). The whole-pipeline check that the incremental quarantine
equals a full refresh's is in test_nightly_batches.py; a first run rebuilds the quarantine whole and never reads
this SQL."""

import duckdb

from pipeline.io.paths import sql_text

# source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of
TABLES = """
create table raw_rejects as select * from (values
    ('a.json', 'vllm', 0, 'unparseable', 'x', 'ingest', '2026-07-01', null),
    ('b.json', 'vllm', 0, 'unparseable', 'x', 'ingest', '2026-07-02', null),
    ('c.json', 'vllm', 0, 'unparseable', 'x', 'ingest', '2026-07-03', null)
) t(source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of);
create table validation_rejects as select * from (values
    ('d.json', 'sglang', 1, 'failed_requests', 'y', 'validate', '2026-07-01', null),
    ('e.json', 'sglang', 2, 'duplicate_run', 'y', 'validate', '2026-07-02', 'r9')
) t(source_file, source_format, source_row, reason_code, detail, stage, run_date_partition, duplicate_of);
create table quarantine_changes as select * from (values ('file', 'b.json'), ('partition', '2026-07-01'))
    t(kind, value);
"""


def test_the_scope_is_the_named_files_and_dates_rows_of_both_sources():
    # named: file b.json, date 2026-07-01. raw_rejects: a.json (2026-07-01, by date), b.json (by file), not
    # c.json (2026-07-03, neither); validation_rejects: d.json (2026-07-01, by date), not e.json (2026-07-02,
    # its file not named). A file name in the partition list ('2026-07-01') or a date in the file list
    # ('b.json') names nothing.
    conn = duckdb.connect()
    conn.execute(TABLES)
    conn.execute(sql_text("quarantine_scope_rows"))
    rows = conn.execute("select source_file, stage, source_row, duplicate_of from quarantine_scope_rows() "
                        "order by source_file").fetchall()
    assert rows == [("a.json", "ingest", 0, None), ("b.json", "ingest", 0, None), ("d.json", "validate", 1, None)]
    in_scope = conn.execute("select source_file, run_date from (values ('c.json', '2026-07-01'), "
                            "('b.json', '2026-07-09'), ('c.json', '2026-07-03'), ('2026-07-01', 'b.json')) "
                            "t(source_file, run_date) where in_quarantine_scope(source_file, run_date)").fetchall()
    assert in_scope == [("c.json", "2026-07-01"), ("b.json", "2026-07-09")]
