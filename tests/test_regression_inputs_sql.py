"""The two SQL files that choose the runs comparisons/regressions reads, on their own over hand-made warehouse
tables (only the columns they read): ``sql/regression_failure_runs.sql`` (the failure-rate series' runs) and
``sql/regression_line_runs.sql`` (the line series' runs). Every expected row is worked out by hand below."""

import duckdb

from pipeline.comparisons.regressions import FAILURE_INPUT_COLUMNS
from pipeline.ingest.schema import RUN_SCHEMA
from pipeline.io.paths import sql_text


def test_failure_series_runs_are_the_dated_accepted_runs_and_those_whose_requests_failed():
    conn = duckdb.connect()
    conn.register("every_column", RUN_SCHEMA.empty_table())  # raw_runs as the ingest writes it
    conn.execute("create table raw_runs as select * from every_column")
    conn.execute("""
    insert into raw_runs (run_id, run_date, source_file, source_row) select * from (values
        ('r1', date '2026-07-02', 'f1.json', 0),     -- accepted, dated: in
        ('r2', null,              'f2.json', 0),     -- accepted, undated: out
        ('r3', date '2026-07-01', 'f3.json', 0),     -- quarantined failed_requests: in
        ('r4', date '2026-07-01', 'f4.json', 0),     -- quarantined missing_metadata: out
        ('r5', date '2026-07-01', 'f3.json', 1),     -- f3.json's other row, refused for a unit slip: out
        ('r6', date '2026-07-03', 'f6.json', null),  -- no_completed_requests, no row number (CSV-less file): in
        ('r7', date '2026-07-01', 'f7.json', 0),     -- a unit slip at row 0 of another file than r3: out
        ('r8', null,              'f8.json', 0)      -- failed_requests but undated: out
    );
    create table validated_runs as select * from (values ('r1'), ('r2')) t(run_id);
    create table validation_rejects as select * from (values
        ('f3.json', 0, 'failed_requests'), ('f4.json', 0, 'missing_metadata'), ('f3.json', 1, 'unit_slip'),
        ('f6.json', null, 'no_completed_requests'), ('f7.json', 0, 'unit_slip'), ('f8.json', 0, 'failed_requests')
    ) t(source_file, source_row, reason_code);
    """)
    result = conn.execute(sql_text("regression_failure_runs"))
    # only the columns failure_runs reads, not the other ~60 of raw_runs (at a million runs those are most of the
    # bytes), and every one of them
    assert [d[0] for d in result.description] == list(FAILURE_INPUT_COLUMNS)
    rows = result.fetchall()
    # ordered by run_date, source_file, source_row: r3 (07-01), r1 (07-02), r6 (07-03)
    assert [row[0] for row in rows] == ["r3", "r1", "r6"]


def test_line_series_runs_are_one_row_per_dated_run_on_nominal_lengths():
    conn = duckdb.connect()
    conn.execute("""
    create table run_metrics as select * from (values
        ('b', 'r1', 'L1', 's1', date '2026-07-01', 8,  1000.0, false),   -- two price books: one row
        ('a', 'r1', 'L1', 's1', date '2026-07-01', 8,  1000.0, false),
        ('a', 'r2', 'L1', 's1', null,              16, 900.0,  false),   -- undated: out
        ('a', 'r3', 'L1', 's2', date '2026-07-02', 8,  800.0,  true),    -- lengths off nominal: out
        ('a', 'r4', 'L2', 's3', date '2026-07-01', 4,  700.0,  false),
        ('b', 'r4', 'L2', 's3', date '2026-07-01', 4,  700.0,  false),
        ('b', 'r5', 'L2', 's4', date '2026-07-03', 4,  600.0,  false)    -- in one price book only: its row
    ) t(price_book, run_id, line_id, sweep_id, run_date, conc, tput_per_gpu, length_off_nominal);
    """)
    for name in ("model", "hw", "framework", "precision", "spec_decoding", "benchmark_type", "run_url",
                 "source_file"):
        conn.execute(f"alter table run_metrics add column {name} varchar")
    for name in ("isl", "osl"):
        conn.execute(f"alter table run_metrics add column {name} integer")
    for name in ("median_tpot_s", "p99_ttft_s"):
        conn.execute(f"alter table run_metrics add column {name} double")
    rows = conn.sql(sql_text("regression_line_runs")).fetchall()
    # ordered by run_date, line_id, sweep_id, conc, run_id: r1 (07-01, L1), r4 (07-01, L2), r5 (07-03)
    assert [(row[0], row[1], row[15]) for row in rows] == [("r1", "L1", 1000.0), ("r4", "L2", 700.0),
                                                            ("r5", "L2", 600.0)]
