"""What the Dagster UI shows of the comparisons: the comparisons asset's materialization carries the frontier chart
of each kind's headline comparison, and the report asset every comparison's chart, each under its full title
(never a cut file-name stem), as inline PNGs that decode."""

import base64
import re

import dagster as dg

from pipeline.comparisons.report import (
    KIND_ORDER,
    headline_comparison_ids,
    index_order,
    page_title,
)
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

IMAGE = re.compile(r"!\[([^\]]*)\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)")


def materialization_metadata(run, key: list[str]) -> dict:
    (event,) = [e for e in run.result.all_events if e.event_type_value == "ASSET_MATERIALIZATION"
                and e.event_specific_data.materialization.asset_key == dg.AssetKey(key)]
    return event.event_specific_data.materialization.metadata


def charts(markdown: str) -> list[tuple[str, bytes]]:
    """(heading, decoded PNG) per chart: each ``### title`` heading followed by its image."""
    sections = markdown.split("\n### ")[1:]
    out = []
    for section in sections:
        heading = section.split("\n", 1)[0]
        (alt, data), = IMAGE.findall(section)
        assert alt == heading
        out.append((heading, base64.b64decode(data)))
    return out


def test_comparisons_asset_shows_the_headline_charts_with_full_titles(sample_run):
    rows = [r for r in sample_run.mart("comparisons").to_pylist() if r["price_book"] == DEFAULT_PRICE_BOOK]
    titles = {r["comparison_id"]: page_title(r) for r in rows}
    headlines = headline_comparison_ids(rows)
    kinds = [next(r["kind"] for r in rows if r["comparison_id"] == c) for c in headlines]
    assert len(headlines) >= 3 and kinds == [k for k in KIND_ORDER if k in kinds]  # one per kind, in kind order
    metadata = materialization_metadata(sample_run, ["comparisons", "matched_comparisons"])
    shown = charts(metadata["headline_charts"].value)
    assert [heading for heading, _ in shown] == [titles[c] for c in headlines]
    # the same comparisons the HTML report's index leads with
    index = (sample_run.out_dir / "report" / "index.html").read_text(encoding="utf-8")
    leads = re.findall(r"<li [^>]*class=headline><span class='kind'>[^<]*</span> <a href=\"[^\"]+\">([^<]+)</a>", index)
    assert leads == [heading for heading, _ in shown]
    for _, png in shown:
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
        assert int.from_bytes(png[16:20], "big") == 691  # 9.6 in at 72 dpi
    # each chart says its sentences at the middle target, as the mart has them
    text = metadata["headline_charts"].value
    for comparison_id in headlines:
        middle = next(r for r in rows if r["comparison_id"] == comparison_id and r["target_index"] == 2)
        assert f"at {middle['target_intvty']:g} tok/s/user: {middle['cost_sentence']}" in text


def test_report_asset_shows_every_comparison_chart_under_its_full_title(sample_run):
    rows = [r for r in sample_run.mart("comparisons").to_pylist() if r["price_book"] == DEFAULT_PRICE_BOOK]
    order = index_order(rows)
    assert len(order) == 16
    metadata = materialization_metadata(sample_run, ["comparisons", "report"])
    assert not [k for k in metadata if k.startswith("chart_")]
    shown = charts(metadata["frontier_charts"].value)
    titles = {r["comparison_id"]: page_title(r) for r in rows}
    assert [heading for heading, _ in shown] == [titles[c] for c in order]
    assert max(len(heading) for heading, _ in shown) > 40  # the old keys cut names at 40 characters
    assert order[:len(headline_comparison_ids(rows))] == headline_comparison_ids(rows)
    assert all(png.startswith(b"\x89PNG") for _, png in shown)


def test_headline_charts_read_only_their_sides_runs_and_draw_the_same_points(sample_run):
    """The comparisons asset reads only the runs of its headline comparisons' sides: each side gets exactly the
    chart points (same runs, same order) that reading every run gives, and runs of other sides are not read."""
    import duckdb

    from pipeline.comparisons.report import _side_runs
    from pipeline.defs.comparisons.assets import chart_runs

    rows = [r for r in sample_run.mart("comparisons").to_pylist()
            if r["slo"] == "none" and r["price_book"] == DEFAULT_PRICE_BOOK]
    headline = [r for r in rows if r["comparison_id"] in headline_comparison_ids(rows)]
    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        every, narrowed = chart_runs(conn), chart_runs(conn, sides_of=headline)
    assert 0 < len(narrowed) < len(every)
    for row in headline:
        assert _side_runs(row, narrowed) == _side_runs(row, every) != []
