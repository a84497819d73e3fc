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


def test_comparisons_asset_names_the_headlines_the_report_charts_first(sample_run):
    """The comparisons asset lists each kind's headline comparison under its full title with its middle-target
    sentences, as text; the same comparisons lead the HTML report's index and the report asset's charts."""
    rows = [r for r in sample_run.mart("comparisons").to_pylist() if r["price_book"] == DEFAULT_PRICE_BOOK]
    titles = {r["comparison_id"]: page_title(r) for r in rows}
    headlines = headline_comparison_ids(rows)
    kinds = [next(r["kind"] for r in rows if r["comparison_id"] == c) for c in headlines]
    assert len(headlines) >= 3 and kinds == [k for k in KIND_ORDER if k in kinds]  # one per kind, in kind order
    text = materialization_metadata(sample_run, ["comparisons", "matched_comparisons"])["headlines"].value
    assert "data:image" not in text
    listed = re.findall(r"^### (.+)$", text, flags=re.M)
    assert listed == [titles[c] for c in headlines]
    index = (sample_run.out_dir / "report" / "index.html").read_text(encoding="utf-8")
    leads = re.findall(r"<li [^>]*class=headline><span class='kind'>[^<]*</span> <a href=\"[^\"]+\">([^<]+)</a>", index)
    assert leads == listed
    charted = charts(materialization_metadata(sample_run, ["comparisons", "report"])["frontier_charts"].value)
    assert [heading for heading, _ in charted[:len(listed)]] == listed
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


def test_a_cli_run_on_a_throwaway_instance_draws_no_ui_charts_and_the_same_report(sample_run_copy, tmp_path):
    """The charts are drawn for the UI only when the run is kept (``DAGSTER_HOME``): a throwaway instance's
    metadata is never shown. The HTML report does not depend on it."""
    from pipeline.__main__ import report_config
    from pipeline.definitions import defs

    ephemeral = dg.DagsterInstance.ephemeral()
    assert report_config(ephemeral) == {"config": {"ui_charts": False}}
    with dg.instance_for_test(temp_dir=str(tmp_path)) as kept:
        assert report_config(kept) == {"config": {"ui_charts": True}}
    index = sample_run_copy.out_dir / "report" / "index.html"
    pages = {p.name: p.read_bytes() for p in index.parent.glob("*.html")}
    result = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=ephemeral, asset_selection=[dg.AssetKey(["comparisons", "report"])],
        run_config={"ops": {"comparisons__report": report_config(ephemeral)}})
    text = materialization_metadata(type("Run", (), {"result": result}), ["comparisons", "report"])[
        "frontier_charts"].value
    assert not charts(text) and "data:image" not in text and "16 charts are in the HTML report" in text
    assert {p.name: p.read_bytes() for p in index.parent.glob("*.html")} == pages


def test_a_run_of_every_asset_on_a_throwaway_instance_asks_for_no_ui_charts_unless_configured(tmp_path):
    """``materialize_all``'s run config: the report's ``ui_charts`` follows the instance unless the caller set
    it; a selection without the report gets no report config (Dagster refuses config for an op it does not
    run); the caller's dict is left as it was."""
    from pipeline.__main__ import with_report_config

    ephemeral = dg.DagsterInstance.ephemeral()
    logger = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    assert with_report_config(logger, ephemeral) == {
        **logger, "ops": {"comparisons__report": {"config": {"ui_charts": False}}}}
    assert logger == {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with dg.instance_for_test(temp_dir=str(tmp_path)) as kept:
        assert with_report_config(None, kept) == {"ops": {"comparisons__report": {"config": {"ui_charts": True}}}}
    asked = {"ops": {"comparisons__report": {"config": {"ui_charts": True}}, "x": {}}}
    assert with_report_config(asked, ephemeral) == asked
    metrics_only = [dg.AssetKey(["metrics", "run_metrics"])]
    assert with_report_config(None, ephemeral, metrics_only) == {}
    assert with_report_config(None, ephemeral, [*metrics_only, dg.AssetKey(["comparisons", "report"])]) == {
        "ops": {"comparisons__report": {"config": {"ui_charts": False}}}}
