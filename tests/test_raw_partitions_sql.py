"""``sql/raw_partition_digests.sql`` and ``sql/raw_partitions_touched.sql`` on their own, over hand-made ``runs``
and ``files`` tables (only the columns they read): what the raw-logs sensor (pipeline/defs/automation.py)
remembers per run-date partition, and which partitions a set of changed files can move. The sensor's folder-level
tests are in test_automation.py."""

import duckdb

from pipeline.io.paths import sql_text

# Two nights; each run's power log is named relative to its run file's folder, or absolute.
RUNS = """
create table runs as select * from (values
    ('2026-07-01', 'n1/a.json', 0, 'power.csv'),
    ('2026-07-01', 'n1/b.json', 0, null),
    ('2026-07-02', 'n2/c.json', 0, '/abs/power.csv'),
    ('2026-07-03', 'n3/d.json', 0, null)
) t(run_date_partition, source_file, source_row, power_log);
"""


def _digests(files: list[tuple[str, str]]) -> dict[str, str]:
    conn = duckdb.connect()
    conn.execute(RUNS)
    conn.execute("create table files (source_file varchar, sha256 varchar)")
    conn.executemany("insert into files values (?, ?)", files)
    return dict(conn.execute(sql_text("raw_partition_digests")).fetchall())


def test_a_changed_power_log_moves_only_the_digest_of_the_dates_whose_runs_name_it():
    files = [("n1/a.json", "s1"), ("n1/b.json", "s2"), ("n1/power.csv", "p1"), ("n2/c.json", "s3"),
             ("/abs/power.csv", "p2"), ("n3/d.json", "s4"), ("n3/notes.txt", "t1")]
    before = _digests(files)
    assert set(before) == {"2026-07-01", "2026-07-02", "2026-07-03"}
    # n1/power.csv (a.json's power log, relative to n1/) changed: 2026-07-01 moves, the others stay
    relative = _digests([(f, "p1-new" if f == "n1/power.csv" else s) for f, s in files])
    assert [relative[k] != before[k] for k in sorted(before)] == [True, False, False]
    # /abs/power.csv (c.json's, absolute) changed: 2026-07-02 moves
    absolute = _digests([(f, "p2-new" if f == "/abs/power.csv" else s) for f, s in files])
    assert [absolute[k] != before[k] for k in sorted(before)] == [False, True, False]
    # a file no run names as its power log (a note beside d.json) changes no digest
    assert _digests([(f, "t1-new" if f == "n3/notes.txt" else s) for f, s in files]) == before


def test_the_touched_partitions_are_those_of_the_touched_run_files_and_power_logs():
    conn = duckdb.connect()
    conn.execute(RUNS)
    conn.execute("create table touched (source_file varchar)")

    def touched(*names: str) -> list[str]:
        conn.execute("delete from touched")
        conn.executemany("insert into touched values (?)", [[name] for name in names])
        return sorted(row[0] for row in conn.execute(sql_text("raw_partitions_touched")).fetchall())

    assert touched("n1/b.json") == ["2026-07-01"]  # a run file
    assert touched("n1/power.csv") == ["2026-07-01"]  # a.json's power log, relative to n1/
    assert touched("/abs/power.csv", "n3/d.json") == ["2026-07-02", "2026-07-03"]
    assert touched("power.csv", "n3/notes.txt") == []  # not a path any run resolves to
