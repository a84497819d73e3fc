"""The explorer's data (``pipeline.comparisons.explorer.explorer_data``) as the report asset builds it, from the
current runs and the day-by-day frontiers read in slices of the warehouse (``explorer_trends``), equals the data
built from every run at once; and its sides are the frontier stage's, built for every fully specified side."""

import json

import duckdb
import pyarrow.compute as pc
import pytest

from pipeline.comparisons.explorer import explorer_data
from pipeline.defs.comparisons import report as report_asset
from pipeline.frontiers.points import FRONTIER_INPUT_COLUMNS, build_frontiers
from pipeline.frontiers.sides import Side
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK


@pytest.mark.parametrize("chunk_rows", [report_asset.TRENDS_CHUNK_ROWS, 10])
def test_sliced_history_gives_the_same_page_data(sample_run, monkeypatch, chunk_rows):
    monkeypatch.setattr(report_asset, "TRENDS_CHUNK_ROWS", chunk_rows)  # 10 rows: the sample in several slices
    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        whole = explorer_data(report_asset.explorer_runs(conn), DEFAULT_PRICE_BOOK)
        sliced = explorer_data(report_asset.explorer_runs(conn, current_only=True), DEFAULT_PRICE_BOOK,
                               trends=report_asset.explorer_trends(conn))
    assert json.dumps(sliced, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert any(side["trend"] for side in whole["sides"])


def test_every_fully_specified_side_has_the_frontier_stages_frontier(sample_run):
    """Each side of the page is one (hw, precision, framework, spec decoding, disagg) the current runs have, and its
    frontier is build_frontiers' for that side over the runs of its disaggregation (the x, the tok/s/GPU)."""
    runs = sample_run.mart("runs")
    current = runs.filter(pc.is_null(runs["superseded_by"]))
    data = explorer_data(runs, DEFAULT_PRICE_BOOK)
    keys = {(r["model"], r["hw"], r["precision"], r["framework"], r["spec_decoding"], bool(r["disagg"]))
            for r in current.to_pylist() if not r["length_off_nominal"]}
    workloads = {w["key"]: w for w in data["workloads"]}
    assert {(workloads[s["workload"]]["model"], s["hw"], s["precision"], s["framework"], s["spec_decoding"],
             s["disagg"]) for s in data["sides"]} == keys
    for s in data["sides"]:
        w = workloads[s["workload"]]
        side = Side(w["model"], w["isl"], w["osl"], s["hw"], s["precision"], s["spec_decoding"], s["framework"],
                    w["benchmark_type"])
        mine = current.filter(pc.equal(pc.fill_null(current["disagg"], False), s["disagg"]))
        points = sorted((p for p in build_frontiers(mine.select(FRONTIER_INPUT_COLUMNS), [side]).to_pylist()
                         if p["price_book"] == DEFAULT_PRICE_BOOK), key=lambda p: p["point_index"])
        shown = s["frontier"][DEFAULT_PRICE_BOOK]
        assert shown["x"] == [p["x_intvty"] for p in points], s["id"]
        assert shown["metrics"]["tput_per_gpu"] == [p["tput_per_gpu"] for p in points], s["id"]


def test_each_sides_trend_is_a_script_of_its_own_that_gives_it_back_whole(sample_run, tmp_path):
    """``write_explorer``: the page embeds no trend point; each side with a trend names its script, and that
    script hands over exactly the side's trend (read back here with the standard library's JSON reader)."""
    from pipeline.comparisons.explorer import EXPLORER_TRENDS_DIR, write_explorer

    data = explorer_data(sample_run.mart("runs"), DEFAULT_PRICE_BOOK)
    write_explorer(data, tmp_path / "report")
    (stale := tmp_path / "report" / EXPLORER_TRENDS_DIR / "999.js").write_text("old", encoding="utf-8")
    page = write_explorer(data, tmp_path / "report")  # a second report over the same folder
    assert not stale.exists()  # no file of a side that is gone is left to load
    html = page.read_text(encoding="utf-8")
    embedded = json.loads(html.split('id="explorer-data">', 1)[1].split("</script>", 1)[0])
    with_trend = [n for n, side in enumerate(data["sides"]) if side["trend"]]
    assert with_trend
    for n, (side, shown) in enumerate(zip(data["sides"], embedded["sides"])):
        assert "x" not in json.dumps(shown.get("trend", {}))  # no day's frontier in the page itself
        if n not in with_trend:
            assert shown["trend"] == {} and "trend_src" not in shown
            continue
        assert "trend" not in shown and shown["trend_src"] == f"{EXPLORER_TRENDS_DIR}/{n}.js"
        script = (tmp_path / "report" / shown["trend_src"]).read_text(encoding="utf-8")
        prefix = f"window.__explorerTrendLoaded({n}, "
        assert script.startswith(prefix) and script.endswith(");\n")
        assert json.loads(script[len(prefix):-3]) == side["trend"]
        assert {k: v for k, v in shown.items() if k != "trend_src"} == {k: v for k, v in side.items() if k != "trend"}
    files = sorted(p.name for p in (tmp_path / "report" / EXPLORER_TRENDS_DIR).iterdir())
    assert files == sorted(f"{n}.js" for n in with_trend)
