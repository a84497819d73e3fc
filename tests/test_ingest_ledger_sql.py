"""``sql/ingest_ledger.sql`` on its own, over hand-made warehouse tables: where each file's rows ended (accepted,
flagged off nominal, quarantined with which reasons, pending) and the file's outcome. Every expected row is worked
out by hand from the tables below; the whole-pipeline ledger tests are in test_nightly_batches.py."""

import duckdb

from pipeline.io.paths import sql_text

TABLES = """
create table raw_files as select * from (values
    ('a.json', 'sa', 10, 'run_log', 'vllm', 3),
    ('b.json', 'sb', 20, 'run_log', 'vllm', 2),
    ('c.json', 'sc', 30, 'run_log', 'sglang', 3),
    ('d.meta.json', 'sd', 40, 'sidecar', null, 0),
    ('e.json', 'se', 50, 'run_log', 'vllm', 1),
    ('f.txt', 'sf', 60, 'unrecognized', null, 0),
    ('g.json', 'sg', 70, 'run_log', 'vllm', 1),
    ('h.json', 'sh', 80, 'run_log', 'vllm', 2)
) t(source_file, sha256, size_bytes, kind, source_format, rows_read);
create table validated_runs as select * from (values ('a.json', 'a1'), ('a.json', 'a2'), ('e.json', 'e1'),
    ('h.json', 'h1')) t(source_file, run_id);
create table run_lengths as select * from (values ('a1', true), ('a2', false), ('e1', false), ('h1', false))
    t(run_id, length_off_nominal);
create table raw_runs as select * from (values ('a.json'), ('a.json'), ('c.json'), ('c.json'), ('e.json'),
    ('h.json')) t(source_file);
create table raw_rejects as select * from (values ('a.json'), ('c.json'), ('h.json')) t(source_file);
create table quarantine as select * from (values ('a.json', 'x'), ('c.json', 'b'), ('c.json', 'a'), ('c.json', 'b'),
    ('h.json', 'y')) t(source_file, reason_code);
"""
COLUMNS = ("source_file", "accepted_rows", "length_off_nominal_rows", "quarantined_rows", "reason_codes",
           "pending_rows", "outcome")


def _ledger(scope: list[str] | None = None) -> list[tuple]:
    conn = duckdb.connect()
    conn.execute(TABLES)
    conn.execute(sql_text("ingest_ledger"))
    if scope is not None:
        conn.executemany("insert into ledger_scope values (?)", [[name] for name in scope])
    scoped = "true" if scope is not None else "false"
    return conn.execute(f"select {', '.join(COLUMNS)} from ingest_ledger_rows_in({scoped}) "
                        "order by source_file").fetchall()


def test_every_file_and_where_its_rows_ended():
    assert _ledger() == [
        # 3 rows: 2 accepted (a1 off nominal), 1 quarantined 'x'; all 3 ingested
        ("a.json", 2, 1, 1, ["x"], 0, "partially_accepted"),
        # 2 rows read, none ingested yet: both pending, no reason
        ("b.json", 0, 0, 0, [], 2, "pending"),
        # 3 rows ingested, all quarantined; reasons distinct and sorted
        ("c.json", 0, 0, 3, ["a", "b"], 0, "quarantined"),
        # a sidecar holds no run
        ("d.meta.json", 0, 0, 0, [], 0, "not_a_run_log"),
        # its one row accepted, none quarantined
        ("e.json", 1, 0, 0, [], 0, "accepted"),
        # an unrecognized file is counted as quarantined (kind in the list), with no row
        ("f.txt", 0, 0, 0, [], 0, "quarantined"),
        # its one row not ingested yet: pending
        ("g.json", 0, 0, 0, [], 1, "pending"),
        # one row accepted, one quarantined 'y'
        ("h.json", 1, 0, 1, ["y"], 0, "partially_accepted"),
    ]


def test_a_scoped_rebuild_gives_only_the_scope_files_rows_with_the_same_counts():
    assert _ledger(["a.json", "b.json"]) == [
        ("a.json", 2, 1, 1, ["x"], 0, "partially_accepted"),
        ("b.json", 0, 0, 0, [], 2, "pending"),
    ]
