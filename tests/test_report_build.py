"""The report's comparison pages written by ``build_report`` (runs grouped by their sides' fixed keys, each run's
chart point drawn once and shared by every page it is on) are byte for byte the pages each comparison's data
gives when every run is scanned with ``Side.matches`` and drawn anew for its page."""

from collections import Counter, defaultdict

import duckdb

from pipeline.comparisons.report import (
    REPORT_PRICE_BOOK,
    _comparison_page,
    _side_runs,
    build_report,
    page_data,
    page_names,
)
from pipeline.defs.comparisons.report import chart_runs


def _read(db_path):
    with duckdb.connect(str(db_path), read_only=True) as conn:
        comparisons = conn.sql("select * exclude (slo) from comparisons where slo = 'none'").to_arrow_table().to_pylist()
        frontiers = conn.sql("select * exclude (slo) from frontiers where slo = 'none'").to_arrow_table().to_pylist()
        return comparisons, frontiers, chart_runs(conn)


def test_pages_with_shared_run_points_equal_pages_scanning_every_run(sample_run, tmp_path):
    comparisons, frontiers, runs = _read(sample_run.db_path)
    written = build_report(comparisons, frontiers, runs, tmp_path / "report")
    by_comparison = defaultdict(list)
    for row in comparisons:
        by_comparison[row["comparison_id"]].append(row)
    points = defaultdict(list)
    for row in frontiers:
        points[(row["price_book"], row["side_id"])].append(row)
    names = page_names(by_comparison)
    pages_of = Counter()
    for comparison_id, rows in by_comparison.items():
        name = names[comparison_id]
        data = page_data(rows, points, runs, REPORT_PRICE_BOOK, f"{name}.csv")
        # the reference: every run of the book scanned with Side.matches for each side, drawn for this page only
        first = {r["side"]: r for r in rows if r["target_index"] == 1}
        data["runs"] = {side: _side_runs(first[side], runs) for side in ("a", "b")}
        shown = sorted((r for r in rows if r["price_book"] == REPORT_PRICE_BOOK),
                       key=lambda r: (r["target_index"], r["side"]))
        page = tmp_path / "report" / f"{name}.html"
        assert page in written
        assert page.read_bytes() == _comparison_page(shown, data).encode("utf-8"), name
        pages_of.update({(p["file"], p["x"], p["config"]) for side in data["runs"].values() for p in side})
    assert max(pages_of.values()) > 1  # runs on several pages: the case the shared points are for


def test_the_charts_runs_come_in_run_id_order_whatever_the_tables_row_order(sample_run):
    """A page's bytes follow the order of its runs: ``chart_runs`` gives them in ``run_id`` order, so a warehouse
    whose ``run_metrics`` rows were written in another order (DuckDB keeps no row order between runs) draws the
    same pages."""
    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        stored = chart_runs(conn)
        ids = [r[0] for r in conn.execute("select run_id from run_metrics where price_book = "
                                          "(select min(price_book) from run_metrics)").fetchall()]
        with duckdb.connect() as other:
            table = conn.sql("select * from run_metrics").to_arrow_table()
            other.register("incoming", table)
            other.execute("create table run_metrics as select * from incoming order by run_id desc")
            reversed_rows = chart_runs(other)
            other_ids = [r[0] for r in other.execute("select run_id from run_metrics where price_book = "
                                                     "(select min(price_book) from run_metrics)").fetchall()]
    assert len(ids) == len(set(ids)) > 10 and other_ids != ids  # the two tables' row orders differ
    assert reversed_rows == stored


def test_the_charts_draw_only_the_runs_no_later_sweep_superseded(sample_run):
    """The dashboard's rule, as the frontiers read it: a run whose sweep a newer sweep of its line replaced
    (``superseded_by`` set) is not drawn; every other run of the price book is."""
    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        table = conn.sql("select * from run_metrics").to_arrow_table()
    with duckdb.connect() as other:
        other.register("incoming", table)
        other.execute("create table run_metrics as select * from incoming")
        everything = chart_runs(other)
        # three runs of one line marked as replaced by a newer sweep (the sample's runs are all current)
        replaced = [r[0] for r in other.execute(
            "select run_id from run_metrics where price_book = $book and superseded_by is null "
            "order by run_id limit 3", {"book": REPORT_PRICE_BOOK}).fetchall()]
        other.execute("create table kept as select * from run_metrics")
        other.execute("delete from run_metrics where not list_contains($ids, run_id)", {"ids": replaced})
        their_points = chart_runs(other)  # the three runs alone, still current here
        other.execute("drop table run_metrics")
        other.execute("create table run_metrics as select * from kept")
        other.execute("update run_metrics set superseded_by = 'gha:999' where list_contains($ids, run_id)",
                      {"ids": replaced})
        drawn = chart_runs(other)

    def counted(rows):
        return Counter(tuple(sorted(r.items())) for r in rows)

    assert len(replaced) == 3 and len(everything) == 84 and len(their_points) == 3
    assert counted(drawn) == counted(everything) - counted(their_points) and len(drawn) == 84 - 3
