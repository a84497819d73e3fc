"""``benchmarks/cli.py``'s README rows: three benchmark runs at one scale become medians with their spread, and
each target is judged on the median (the peak on the largest run)."""

import benchmarks.cli as cli


def test_a_scale_row_gives_the_median_and_spread_of_its_runs_and_judges_the_targets(monkeypatch, tmp_path):
    summaries = iter([
        {"full_s": 20.0, "checks_s": 4.0, "report_s": 8.0, "batch_s": 3.0, "peak_mib": 1500.0, "duckdb_scan_s": 5.0},
        {"full_s": 10.0, "checks_s": 5.0, "report_s": 9.0, "batch_s": 1.0, "peak_mib": 2100.0, "duckdb_scan_s": 4.0},
        {"full_s": 14.0, "checks_s": 6.0, "report_s": 7.0, "batch_s": 2.5, "peak_mib": 1000.0, "duckdb_scan_s": 6.0},
    ])
    calls = []
    monkeypatch.setattr(cli, "_benchmark", lambda work, runs, batch: calls.append((runs, batch)) or next(summaries))
    rows = cli.scale_rows(tmp_path, 100_000, 3)
    assert calls == [(100_000, 2_000)] * 3
    assert rows == [
        ("full refresh of 100,000 <= 15 s", "14.00 s (10.00-20.00), 2.8x DuckDB's scan (5.00 s)", True),
        ("asset checks of 100,000", "5.00 s (4.00-6.00)", None),
        ("HTML report of 100,000", "8.00 s (7.00-9.00)", None),
        ("nightly batch of 2,000 onto 100,000 <= 2 s", "2.50 s (1.00-3.00)", False),
        ("peak RSS onto 100,000 <= 2 GiB (step-wise, the largest of 3)", "2,100 MiB", False),
    ]


def test_the_peak_row_names_the_step_that_reached_it(monkeypatch, tmp_path):
    summaries = iter([
        {"full_s": 1.0, "checks_s": 1.0, "report_s": 1.0, "batch_s": 1.0, "peak_mib": 900.0, "duckdb_scan_s": 1.0,
         "step_peaks_mib": {"full: comparisons/trends + trends/ mart": 900.0, "full: ingest/parsed_runs": 400.0}},
        {"full_s": 1.0, "checks_s": 1.0, "report_s": 1.0, "batch_s": 1.0, "peak_mib": 950.0, "duckdb_scan_s": 1.0,
         "step_peaks_mib": {"batch ['2027-01-15']: comparisons/regressions": 950.0,
                            "full: comparisons/trends + trends/ mart": 700.0}},
    ])
    monkeypatch.setattr(cli, "_benchmark", lambda work, runs, batch: next(summaries))
    *_, peak = cli.scale_rows(tmp_path, 10_000, 2)
    assert peak == ("peak RSS onto 10,000 <= 2 GiB (step-wise, the largest of 2)",
                    "950 MiB (batch ['2027-01-15']: comparisons/regressions)", True)


def test_the_full_refresh_limit_scales_with_the_runs(monkeypatch, tmp_path):
    summary = {"full_s": 140.0, "checks_s": 1.0, "report_s": 1.0, "batch_s": 1.0, "peak_mib": 100.0,
               "duckdb_scan_s": 70.0}
    monkeypatch.setattr(cli, "_benchmark", lambda work, runs, batch: summary)
    full, *_, peak = cli.scale_rows(tmp_path, 1_000_000, 1)
    assert full == ("full refresh of 1,000,000 <= 150 s", "140.00 s (140.00-140.00), 2.0x DuckDB's scan (70.00 s)",
                    True)
    assert peak[2] is True
