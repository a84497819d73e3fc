"""The interactive comparison page in headless Chromium, opened from disk (file://, no server): a typed target gives
each side's cell equal to ``pipeline.frontiers.spline.interpolate`` on the frontier mart (bit for bit), with the
comparison rule's clamping and notes; switching price book and cost tier shows the mart's cost column; the CSV
download equals the mart's rows; the index counts, orders and filters; no console error, no request off file://."""

import csv
import io
import json

import numpy as np
import pytest
from conftest import CHROMIUM, OTHER_BOOK, unrestricted

from pipeline.comparisons.compare import compare
from pipeline.comparisons.report import CSV_COLUMNS, KIND_SUFFIX, json_script, slug
from pipeline.frontiers.points import (
    OPTIONAL_METRICS,
    SPLINED_METRICS,
    frontiers_by_side,
)
from pipeline.frontiers.sides import enumerate_comparisons
from pipeline.frontiers.spline import interpolate
from pipeline.io.storage import read_mart
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

TITLE = "MI355X FP4: MTP vs Off"
TIERS = ("hyperscaler", "neocloud", "rental")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")


@pytest.fixture
def marts(sample_run_two_books):
    """The sample through the whole pipeline with a second price book (MI355X discounted): the marts folder."""
    return sample_run_two_books.out_dir


@pytest.fixture()
def browser_page(browser):
    """A Chromium page recording console errors, page errors and every requested URL."""
    context = browser.new_context(accept_downloads=True, viewport={"width": 1100, "height": 1500})
    page = context.new_page()
    log = {"errors": [], "requests": []}
    page.on("console", lambda msg: log["errors"].append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: log["errors"].append(str(exc)))
    context.on("request", lambda request: log["requests"].append(request.url))
    yield page, log


def assert_offline(log):
    assert log["errors"] == []
    assert log["requests"] and all(url.split(":")[0] in ("file", "blob", "data") for url in log["requests"]), \
        log["requests"]


def mart_rows(marts, title):
    rows = [r for r in unrestricted(read_mart(marts, "comparisons")).to_pylist() if r["title"] == title]
    assert rows
    return rows


def frontier(marts, book, side_id):
    points = sorted((p for p in unrestricted(read_mart(marts, "frontiers")).to_pylist()
                     if p["price_book"] == book and p["side_id"] == side_id), key=lambda p: p["point_index"])
    assert points
    return points


def cell_values(page, metric):
    """{(target_index, side): float or None} of one table row, from the cells' full-precision data-value."""
    out = {}
    for cell in page.locator(f"#comparison-table tr[data-metric='{metric}'] td[data-side]").all():
        value = cell.get_attribute("data-value")
        out[(int(cell.get_attribute("data-target-index")), cell.get_attribute("data-side"))] = (
            float(value) if value else None)
    return out


def open_page(page, marts, title):
    rows = mart_rows(marts, title)
    page.goto((marts / "report" / f"{slug(rows[0])}.html").as_uri())
    page.wait_for_function("window.__comparison !== undefined")
    return rows


def test_typed_targets_equal_the_python_spline_with_the_comparison_rule(marts, browser_page):
    page, log = browser_page
    rows = open_page(page, marts, TITLE)
    seed = [r for r in rows if r["price_book"] == DEFAULT_PRICE_BOOK]
    side_ids = {r["side"]: r["side_id"] for r in seed}
    points = {k: frontier(marts, DEFAULT_PRICE_BOOK, side_ids[k]) for k in "ab"}
    x = {k: np.array([p["x_intvty"] for p in points[k]]) for k in "ab"}
    # inside both ranges, on a measured point of MTP, below both, and above Off's last point (clamped there)
    targets = [37.3, float(x["a"][2]), 12.5, 95.25]
    metrics = ["tput_per_gpu", "cost_per_mtok_hyperscaler", "tok_s_per_mw", "concurrency"]
    for batch in (targets[:3], targets[1:]):
        for i, target in enumerate(batch, start=1):
            page.fill(f"#target-{i}", repr(target))
        for metric in metrics:
            shown = cell_values(page, metric)
            for i, target in enumerate(batch, start=1):
                for k in "ab":
                    expected = interpolate(x[k], [p[metric] for p in points[k]], [target], clamp=True)[0]
                    assert shown[(i, k)] == expected, (metric, target, k)  # bit for bit
        # the clamped and gap notes are the comparison rule's, for the typed targets
        comparison = next(c for c in enumerate_comparisons(read_mart(marts, "runs").to_pylist())
                          if c.comparison_id == seed[0]["comparison_id"])
        by_side = frontiers_by_side([p for p in unrestricted(read_mart(marts, "frontiers")).to_pylist()
                                     if p["price_book"] == DEFAULT_PRICE_BOOK])
        expected_rows = compare(comparison, by_side, targets=batch)
        notes = [f"at {r['target_intvty']:g} tok/s/user, {r['cell_note']}" for r in expected_rows if r["cell_note"]]
        assert notes  # 12.5 is below both frontiers; 95.25 above Off's
        assert page.locator("#cell-notes").inner_text() == f"Not measured at the target: {'; '.join(notes)}."
        noted = page.locator("#comparison-table tr[data-metric='tput_per_gpu'] td.noted").count()
        assert noted == sum(bool(r["cell_note"]) for r in expected_rows)
        # every column of the CSV at the typed targets is compare()'s
        csv_rows = list(csv.DictReader(io.StringIO(page.evaluate("window.__comparison.csv"))))
        assert_csv_equals(csv_rows, expected_rows)
    assert page.locator("#headline-scope").is_visible()  # the sentences say they are at the default targets
    page.click("#reset-targets")
    assert not page.locator("#headline-scope").is_visible()
    assert_offline(log)


@pytest.mark.long
def test_page_spline_equals_python_at_many_targets_on_every_page(marts, browser_page):
    """The page's evaluator against ``interpolate(clamp=True)`` at 241 targets from below to above each side's
    frontier, every metric the side has, every comparison and price book of the sample: equal bit for bit."""
    page, log = browser_page
    rows = unrestricted(read_mart(marts, "comparisons")).to_pylist()
    frontiers = unrestricted(read_mart(marts, "frontiers")).to_pylist()
    checked = 0
    for comparison_id in sorted({r["comparison_id"] for r in rows}):
        mine = [r for r in rows if r["comparison_id"] == comparison_id]
        page.goto((marts / "report" / f"{slug(mine[0])}.html").as_uri())
        page.wait_for_function("window.__comparison !== undefined")
        for book in sorted({r["price_book"] for r in mine}):
            for side in "ab":
                side_id = next(r["side_id"] for r in mine if r["side"] == side)
                points = sorted((p for p in frontiers if p["price_book"] == book and p["side_id"] == side_id),
                                key=lambda p: p["point_index"])
                x = np.array([p["x_intvty"] for p in points])
                targets = [*np.linspace(x[0] * 0.5, x[-1] * 1.5, 240).tolist(), *x.tolist()]
                got = page.evaluate("([book, side, targets]) => targets.map(t => window.__comparison.evaluate("
                                    "book, side, t))", [book, side, targets])
                for metric in SPLINED_METRICS + OPTIONAL_METRICS:
                    values = [p[metric] for p in points]
                    if any(v is None for v in values):
                        assert all(cell[metric] is None for cell in got), metric  # never across a hole
                        continue
                    expected = interpolate(x, values, targets, clamp=True)
                    assert [cell[metric] for cell in got] == expected.tolist(), (comparison_id, book, side, metric)
                    checked += 1
    assert checked > 16 * 2 * 2 * 6
    assert_offline(log)


def test_price_book_and_tier_switch_show_the_mart_cost_columns(marts, browser_page):
    page, log = browser_page
    rows = open_page(page, marts, TITLE)
    books = {r["price_book"] for r in rows}
    assert books == {DEFAULT_PRICE_BOOK, OTHER_BOOK}
    for book in sorted(books):
        page.select_option("#price-book", book)
        mart = {(r["target_index"], r["side"]): r for r in rows if r["price_book"] == book}
        for tier in TIERS:
            page.select_option("#cost-tier", tier)
            column = f"cost_per_mtok_{tier}"
            assert cell_values(page, column) == {key: r[column] for key, r in mart.items()}, (book, tier)
            label = page.locator(f"#comparison-table tr[data-metric='{column}'] td").first.inner_text()
            assert label == f"Cost ($/M tokens, {tier})"
            shown = page.locator(f"#comparison-table tr[data-metric='{column}'] td[data-side]").all_inner_texts()
            assert shown == [f"${mart[(t, s)][column]:.3f}" for t in (1, 2, 3) for s in "ab"]
        assert cell_values(page, "tput_per_gpu") == {key: r["tput_per_gpu"] for key, r in mart.items()}
    seed = {(r["target_index"], r["side"]): r for r in rows if r["price_book"] == DEFAULT_PRICE_BOOK}
    other = {(r["target_index"], r["side"]): r for r in rows if r["price_book"] == OTHER_BOOK}
    assert all(seed[k]["cost_per_mtok_rental"] != other[k]["cost_per_mtok_rental"] for k in seed)  # MI355X moved
    assert_offline(log)


def assert_csv_equals(csv_rows, mart):
    """Every CSV column equals the mart row's value: floats bit for bit, ints, booleans, text, null as empty."""
    assert len(csv_rows) == len(mart)
    for got, want in zip(csv_rows, sorted(mart, key=lambda r: (r["target_index"], r["side"]))):
        for column in CSV_COLUMNS:
            value = want[column]
            if value is None:
                assert got[column] == "", column
            elif isinstance(value, bool):
                assert got[column] == str(value).lower(), column
            elif isinstance(value, (int, float)):
                assert float(got[column]) == value, column
            else:
                assert got[column] == value, column


def test_csv_download_equals_the_mart_rows(marts, browser_page):
    page, log = browser_page
    rows = open_page(page, marts, TITLE)
    for book in (OTHER_BOOK, DEFAULT_PRICE_BOOK):
        page.select_option("#price-book", book)
        with page.expect_download() as info:
            page.click("#download-csv")
        download = info.value
        assert download.suggested_filename == f"{slug(rows[0])}.csv"
        got = list(csv.DictReader(io.StringIO(open(download.path(), encoding="utf-8").read())))
        assert list(got[0]) == list(CSV_COLUMNS)
        assert_csv_equals(got, [r for r in rows if r["price_book"] == book])
    assert_offline(log)


def test_measured_power_row_where_telemetry_exists(marts, browser_page):
    page, log = browser_page
    rows = mart_rows(marts, "H200 vs B200 FP8")
    with_power = {r["comparison_id"] for r in rows if r["measured_tok_s_per_mw"] is not None}
    assert with_power
    comparison_rows = [r for r in rows if r["comparison_id"] == min(with_power)]
    page.goto((marts / "report" / f"{slug(comparison_rows[0])}.html").as_uri())
    page.wait_for_function("window.__comparison !== undefined")
    mart = {(r["target_index"], r["side"]): r["measured_tok_s_per_mw"]
            for r in comparison_rows if r["price_book"] == DEFAULT_PRICE_BOOK}
    assert cell_values(page, "measured_tok_s_per_mw") == mart
    # a page without telemetry on either side has no such row
    open_page(page, marts, TITLE)
    assert page.locator("tr[data-metric='measured_tok_s_per_mw']").count() == 0
    assert_offline(log)


def test_chart_hover_names_the_run(marts, browser_page):
    page, log = browser_page
    rows = open_page(page, marts, TITLE)
    seed = next(r for r in rows if r["price_book"] == DEFAULT_PRICE_BOOK and r["side"] == "a")
    point = frontier(marts, DEFAULT_PRICE_BOOK, seed["side_id"])[1]
    # the pixel of MTP's second frontier point, from the chart's own scales
    xy = page.evaluate("""([x, y]) => { const c = Chart.getChart('frontier-chart');
        return [c.scales.x.getPixelForValue(x), c.scales.y.getPixelForValue(y)]; }""",
                       [point["x_intvty"], point["tput_per_gpu"]])
    page.hover("#frontier-chart", position={"x": xy[0], "y": xy[1]})
    lines = page.evaluate("""() => { const t = Chart.getChart('frontier-chart').tooltip;
        return t.opacity ? t.body.flatMap(b => b.lines) : []; }""")
    assert f"file: {point['source_file']}" in lines
    assert any(line.startswith("config: mi355x · fp4") and "conc" in line for line in lines), lines
    run = next(r for r in read_mart(marts, "runs").to_pylist() if r["source_file"] == point["source_file"])
    assert f"date: {run['run_date'] or 'undated'}" in lines
    assert_offline(log)


def test_index_summary_headlines_and_filters(marts, browser_page):
    page, log = browser_page
    seed = [r for r in unrestricted(read_mart(marts, "comparisons")).to_pylist() if r["price_book"] == DEFAULT_PRICE_BOOK]
    first_rows = {r["comparison_id"]: r for r in seed if r["target_index"] == 1 and r["side"] == "a"}
    sides = {(r["comparison_id"], r["side"]): r for r in seed if r["target_index"] == 1}
    page.goto((marts / "report" / "index.html").as_uri())
    summary = dict(tuple(row) for row in page.evaluate(
        "() => [...document.querySelectorAll('#summary tbody tr')].map(r => [...r.cells].map(c => c.textContent))"))
    kinds = {}
    for row in first_rows.values():
        kinds[KIND_SUFFIX[row["kind"]]] = kinds.get(KIND_SUFFIX[row["kind"]], 0) + 1
    assert summary == {**{k: str(v) for k, v in kinds.items()}, "All": str(len(first_rows))}
    items = page.locator("#comparison-list li")
    assert items.count() == len(first_rows)
    headline_count = page.locator("#comparison-list li.headline").count()
    assert 1 <= headline_count <= len(kinds)
    assert all("headline" in (items.nth(i).get_attribute("class") or "") for i in range(headline_count))
    page.select_option("#filter-hw", "mi355x")
    expected = {cid for cid in first_rows if "mi355x" in (sides[(cid, "a")]["hw"], sides[(cid, "b")]["hw"])}
    assert page.locator("#comparison-list li:visible").count() == len(expected) < len(first_rows)
    assert page.locator("#filter-count").inner_text() == f"{len(expected)} of {len(first_rows)} comparisons shown"
    page.select_option("#filter-kind", "Precision")
    expected = {cid for cid in expected if first_rows[cid]["kind"] == "precision"}
    assert page.locator("#comparison-list li:visible").count() == len(expected)
    page.select_option("#filter-hw", "")
    page.select_option("#filter-kind", "")
    page.select_option("#filter-precision", "fp4")
    expected = {cid for cid in first_rows if "fp4" in (sides[(cid, "a")]["precision"], sides[(cid, "b")]["precision"])}
    assert page.locator("#comparison-list li:visible").count() == len(expected)
    page.select_option("#filter-precision", "")
    page.select_option("#filter-model", "dsr1")
    expected = {cid for cid, r in first_rows.items() if r["model"] == "dsr1"}
    assert page.locator("#comparison-list li:visible").count() == len(expected)
    assert_offline(log)


def test_json_script_cannot_be_closed_by_a_value():
    element = json_script("page-data", {"label": "</script><script>alert(1)</script><!--", "amp": "&lt;"})
    body = element[element.index(">") + 1:-len("</script>")]
    assert "<" not in body and ">" not in body and "&" not in body
    assert json.loads(body) == {"label": "</script><script>alert(1)</script><!--", "amp": "&lt;"}
    with pytest.raises(ValueError):
        json_script("x", {"v": float("nan")})
