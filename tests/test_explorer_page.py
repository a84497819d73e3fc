"""The explorer page (``report/explorer.html``) in headless Chromium (Debian's ``chromium``, driven by Playwright),
served on localhost from the shared two-price-book sample run: every control changes what it should, the view
survives a copied link, the PNG and CSV exports hold what is shown, a 390 px screen has no horizontal page
overflow, no request leaves localhost, and every cell of the table the page computes equals
``pipeline.comparisons.compare.compare`` for 50 seeded random side pairs and targets (read from the page's script,
not recomputed here)."""

import base64
import csv
import datetime as dt
import functools
import http.server
import io
import random
import threading
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import CHROMIUM, OTHER_BOOK

from pipeline.comparisons.compare import COMPARISON_SCHEMA, compare, headline
from pipeline.frontiers.points import FRONTIER_INPUT_COLUMNS, build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import Comparison, Side
from pipeline.io.storage import read_mart
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """The standard library's static file handler without its per-request log line."""

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def explorer_site(_two_books_session_run):
    """The two-book sample's report (the shared session run, served read-only) on localhost, and its marts."""
    run = _two_books_session_run
    assert run.result.success
    handler = functools.partial(QuietHandler, directory=str(run.out_dir / "report"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", run.out_dir
    server.shutdown()


def open_explorer(browser, base, hash_="", width=1200, downloads=False):
    """A new page on the explorer, every request routed: one to a host other than 127.0.0.1 is aborted and
    recorded (``log["off_host"]``), as are console and page errors."""
    context = browser.new_context(viewport={"width": width, "height": 1600}, accept_downloads=downloads)
    log = {"errors": [], "off_host": [], "local": []}

    def route(r):
        url = r.request.url
        scheme, host = urlsplit(url).scheme, urlsplit(url).hostname
        if scheme in ("data", "blob") or host == "127.0.0.1":
            log["local"].append(url)
            r.continue_()
        else:
            log["off_host"].append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda msg: log["errors"].append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: log["errors"].append(str(exc)))
    page.goto(f"{base}/explorer.html{hash_}")
    settled(page)
    return page, log


def settled(page):
    """Wait until the page has drawn and every side trend it asked for has loaded (each is a script of its own,
    ``explorer.split_trends``) and been drawn."""
    page.wait_for_function("window.__explorer !== undefined && window.__explorer.trendsPending === 0")


def shown(page, expression):
    settled(page)
    return page.evaluate(f"() => {{ const e = window.__explorer; return {expression}; }}")


def frontier_labels(page):
    """The chart's frontier lines: the side ids they draw."""
    return shown(page, "e.chart.data.datasets.filter(d => d.sideId).map(d => d.sideId)")


def data(page):
    """The page's data as its script holds it: the embedded JSON plus the trends loaded so far (a chosen side's)."""
    settled(page)
    return page.evaluate("window.__explorer.data")


def test_index_links_the_explorer(explorer_site, browser):
    base, _ = explorer_site
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/index.html")
    page.click("#explorer-link a")
    page.wait_for_function("window.__explorer !== undefined")
    assert page.locator("h1").inner_text() == "Explorer"


def test_every_control_changes_what_it_should(explorer_site, browser):
    base, marts = explorer_site
    page, log = open_explorer(browser, base)
    d = data(page)
    sides = {s["id"]: s for s in d["sides"]}
    state = shown(page, "e.state")
    # the default view: the workload with the most sides, four of them drawn, the first two in the table
    assert len(state["sides"]) == 4 and frontier_labels(page) == state["sides"]
    assert {sides[i]["workload"] for i in state["sides"]} == {state["workload"]}
    # sides: unticking one removes its frontier; ticking another adds it
    first, extra = state["sides"][0], next(s["id"] for s in d["sides"]
                                             if s["workload"] == state["workload"] and s["id"] not in state["sides"])
    page.locator(f"#side-list input[value='{first}']").uncheck()
    assert first not in frontier_labels(page) and len(frontier_labels(page)) == 3
    page.locator(f"#side-list input[value='{extra}']").check()
    assert frontier_labels(page)[-1] == extra and len(frontier_labels(page)) == 4
    # the filter narrows the list to the sides whose label holds every word; untick all empties the chart
    page.fill("#side-filter", "b200 FP4")
    visible = page.locator("#side-list label:visible").all_inner_texts()
    assert visible and all("B200 FP4" in text for text in visible)
    assert len(visible) < page.locator("#side-list label").count()
    page.fill("#side-filter", "")
    chosen_now = shown(page, "e.state.sides")
    page.click("#clear-sides")
    assert frontier_labels(page) == [] and shown(page, "e.cells") == []
    for side_id in chosen_now:
        page.locator(f"#side-list input[value='{side_id}']").check()
    assert frontier_labels(page) == chosen_now
    # y metric: the frontier points are the side's cost points; the axis says so
    page.select_option("#y-metric", "cost_per_mtok_rental")
    points = shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data.map(p => p.y)")
    side = sides[shown(page, "e.state.sides[0]")]
    assert points == side["frontier"][DEFAULT_PRICE_BOOK]["metrics"]["cost_per_mtok_rental"]
    assert shown(page, "e.chart.options.scales.y.title.text") == "Cost ($/M tokens, rental)"
    # x axis: concurrency puts each frontier point at its concurrency
    page.select_option("#x-axis", "conc")
    xs = shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data.map(p => p.x)")
    assert xs == side["frontier"][DEFAULT_PRICE_BOOK]["metrics"]["concurrency"]
    assert shown(page, "e.chart.options.scales.x.title.text") == "Concurrency (requests in flight)"
    # scales
    page.select_option("#y-scale", "logarithmic")
    page.select_option("#x-scale", "logarithmic")
    assert shown(page, "[e.chart.scales.x.type, e.chart.scales.y.type]") == ["logarithmic", "logarithmic"]
    # runs on and off
    runs = "e.chart.data.datasets.filter(d => d.label.endsWith(' runs')).length"
    assert shown(page, runs) == 4
    page.uncheck("#show-runs")
    assert shown(page, runs) == 0
    # price book: an MI355X side's cost in the other book is that book's frontier
    page.select_option("#x-axis", "x_intvty")
    mi355x = next(s for s in d["sides"] if s["hw"] == "mi355x")
    page.select_option("#workload", mi355x["workload"])
    while page.locator("#side-list input:checked").count():
        page.locator("#side-list input:checked").first.click()
    page.locator(f"#side-list input[value='{mi355x['id']}']").check()
    page.select_option("#y-metric", "cost_per_mtok_hyperscaler")
    seed = shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data.map(p => p.y)")
    page.select_option("#price-book", OTHER_BOOK)
    other = shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data.map(p => p.y)")
    assert seed == mi355x["frontier"][DEFAULT_PRICE_BOOK]["metrics"]["cost_per_mtok_hyperscaler"]
    assert other == mi355x["frontier"][OTHER_BOOK]["metrics"]["cost_per_mtok_hyperscaler"] and other != seed
    # the pair, its targets and the cost tier drive the table
    page.select_option("#price-book", DEFAULT_PRICE_BOOK)
    page.select_option("#workload", state["workload"])
    ids = shown(page, "e.state.sides")
    page.select_option("#pair-a", ids[2])
    page.select_option("#pair-b", ids[0])
    assert shown(page, "[e.state.a, e.state.b]") == [ids[2], ids[0]]
    heads = page.locator("#explorer-table thead th").all_inner_texts()
    assert heads[1].endswith(sides[ids[2]]["label"]) and heads[2].endswith(sides[ids[0]]["label"])
    page.fill("#target-2", "47.5")
    assert [c["target"] for c in shown(page, "e.cells")][1] == 47.5
    assert page.locator("#explorer-table thead th").nth(3).inner_text().startswith("47.5 tok/s/user")
    page.select_option("#cost-tier", "neocloud")
    assert page.locator("#explorer-table tr[data-metric='cost_per_mtok_neocloud'] td").first.inner_text() == \
        "Cost ($/M tokens, neocloud)"
    page.click("#reset-targets")
    assert shown(page, "e.state.targets") is None
    # the trend target: each day's value is the trends mart's at that target (a comparison's target, read off the
    # day's frontier), null outside the day's range
    trends = [r for r in read_mart(marts, "trends").to_pylist() if r["price_book"] == DEFAULT_PRICE_BOOK]
    page.select_option("#y-metric", "tput_per_gpu")  # the trend draws the chosen metric where the mart has it

    def mart_rows(s, target):
        return [r for r in trends if r["target_intvty"] == target and r["hw"] == s["hw"]
                and r["precision"] == s["precision"] and r["framework"] == s["framework"]
                and r["spec_decoding"] == s["spec_decoding"] and r["model"] == s["workload"].split("|")[0]
                and r["x_intvty_stat"] == s["x_intvty_stat"]]

    chosen = shown(page, "e.state.sides")
    target = next(r["target_intvty"] for r in trends if r["in_range"] and mart_rows(sides[chosen[0]], r["target_intvty"]))
    page.fill("#trend-target", repr(target))
    title = shown(page, "e.trendChart.options.scales.y.title.text")
    assert title.startswith("Throughput (tok/s/GPU) at ") and title.endswith(" tok/s/user"), title
    checked = 0
    for side_id in chosen:
        s = sides[side_id]
        got = shown(page, f"e.trendChart.data.datasets.filter(d => d.sideId === {side_id!r})[0].data")
        assert [p["date"] for p in got] == [d["date"] for d in s["trend"].get(DEFAULT_PRICE_BOOK, [])]  # its dates
        # x is the date's day number: dates are as far apart on the axis as in time
        assert [p["x"] for p in got] == [(dt.date.fromisoformat(p["date"]) - dt.date(1970, 1, 1)).days for p in got]
        by_date = {str(r["run_date"]): r for r in mart_rows(s, target)}  # a side no comparison reads here: none
        for date, value in ((p["date"], p["y"]) for p in got):
            row = by_date.get(date)
            if row is None:
                continue
            checked += 1
            if row["in_range"]:
                assert value == pytest.approx(row["tput_per_gpu"], rel=1e-9)
            else:
                assert value is None
    assert checked
    page.fill("#trend-target", "1000")  # beyond every frontier: a gap, never clamped
    assert all(v is None for v in shown(page, "e.trendChart.data.datasets.flatMap(d => d.data.map(p => p.y))"))
    assert log["errors"] == [] and log["off_host"] == []


def test_error_bars_follow_the_points_intervals(explorer_site, browser, tmp_path):
    """Where a frontier point averages repeats its 95 % interval is drawn as error bars, and the toggle takes
    them away. The sample has no repeats: one side's runs are given a repeat each (the same line, sweep and
    concurrency, 4 % more tok/s/GPU), the explorer is built from those runs (``explorer_data``, the frontier
    stage's averaging and Student-t intervals) and opened from disk."""
    from pipeline.comparisons.explorer import explorer_data, write_explorer

    _, marts = explorer_site
    runs = read_mart(marts, "runs")
    side = pc.and_(pc.equal(runs["hw"], "b200"), pc.and_(pc.equal(runs["framework"], "sglang"),
                                                         pc.equal(runs["precision"], "fp4")))
    repeats = runs.filter(side)
    repeats = repeats.set_column(repeats.schema.get_field_index("run_id"), "run_id",
                                 pc.binary_join_element_wise(repeats["run_id"], "repeat", "-"))
    repeats = repeats.set_column(repeats.schema.get_field_index("tput_per_gpu"), "tput_per_gpu",
                                 pc.multiply(repeats["tput_per_gpu"], 1.04))
    data_ = explorer_data(pa.concat_tables([runs, repeats]), DEFAULT_PRICE_BOOK)
    page_path = write_explorer(data_, tmp_path / "report")
    target = next(s for s in data_["sides"] if s["hw"] == "b200" and s["framework"] == "sglang"
                  and s["precision"] == "fp4")
    ci = target["frontier"][DEFAULT_PRICE_BOOK]["point_ci"]
    assert all(v is not None for v in ci["tput_per_gpu_ci_lo"])  # every point now averages two runs
    context = browser.new_context(viewport={"width": 1200, "height": 1600})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(page_path.as_uri() + f"#w={target['workload']}&s={target['id']}".replace("|", "%7C"))
    page.wait_for_function("window.__explorer !== undefined")
    points = shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data")
    assert [(p["yMin"], p["yMax"]) for p in points] == list(zip(ci["tput_per_gpu_ci_lo"], ci["tput_per_gpu_ci_hi"]))
    assert [(p["xMin"], p["xMax"]) for p in points] == list(zip(ci["median_intvty_ci_lo"], ci["median_intvty_ci_hi"]))
    page.select_option("#y-metric", "cost_per_mtok_hyperscaler")  # a cost's interval: price over the tok/s bounds
    price = target["frontier"][DEFAULT_PRICE_BOOK]["prices_per_mtok"]["hyperscaler"]
    points = shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data")
    assert [(p["yMin"], p["yMax"]) for p in points] == [(price / hi, price / lo) for lo, hi in
                                                         zip(ci["tput_per_gpu_ci_lo"], ci["tput_per_gpu_ci_hi"])]
    page.uncheck("#show-errors")
    assert all("yMin" not in p for p in shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data"))
    page.select_option("#x-axis", "conc")
    page.check("#show-errors")  # no x interval off the frontier's own axis
    assert all("xMin" not in p for p in shown(page, "e.chart.data.datasets.filter(d => d.errorBars)[0].data"))
    assert errors == []


def test_a_copied_link_reopens_the_same_view(explorer_site, browser):
    base, _ = explorer_site
    page, _ = open_explorer(browser, base)
    d = data(page)
    workload = d["workloads"][-1]["key"]
    page.select_option("#workload", workload)
    ids = [s["id"] for s in d["sides"] if s["workload"] == workload]
    page.locator(f"#side-list input[value='{ids[0]}']").uncheck()
    page.select_option("#y-metric", "tok_s_per_mw")
    page.select_option("#x-axis", "p90_intvty")
    page.select_option("#y-scale", "logarithmic")
    page.select_option("#price-book", OTHER_BOOK)
    page.select_option("#cost-tier", "rental")
    page.uncheck("#show-runs")
    page.fill("#target-1", "21.25")
    page.fill("#trend-target", "40")
    page.click("#copy-link")  # the link shown (and offered to the clipboard) is the page's address with the view
    state, csv_text, link = shown(page, "e.state"), shown(page, "e.csv"), page.locator("#link-text").inner_text()
    assert link == page.url and link.split("#", 1)[1] == shown(page, "e.hash")[1:]
    assert state["workload"] == workload and ids[0] not in state["sides"]
    again, log = open_explorer(browser, base, hash_="#" + link.split("#", 1)[1])
    assert shown(again, "e.state") == state
    assert shown(again, "e.csv") == csv_text
    assert again.locator("#y-metric").input_value() == "tok_s_per_mw"
    assert again.locator("#price-book").input_value() == OTHER_BOOK
    assert log["errors"] == []
    # a link naming things the data lack opens the default view, not a broken one
    broken, log = open_explorer(browser, base, hash_="#w=nope&y=drop%20table&book=none&t=-1,x,3")
    assert shown(broken, "e.state.y") == "tput_per_gpu" and shown(broken, "e.state.targets") is None
    assert log["errors"] == []


def test_png_and_csv_exports_hold_what_is_shown(explorer_site, browser, tmp_path):
    base, _ = explorer_site
    page, log = open_explorer(browser, base, downloads=True)
    with page.expect_download() as info:
        page.click("#download-png")
    png = tmp_path / "chart.png"
    info.value.save_as(png)
    shown_png = base64.b64decode(shown(page, "e.chart.toBase64Image('image/png')").split(",", 1)[1])
    assert png.read_bytes() == shown_png and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(shown_png[16:20], "big"), int.from_bytes(shown_png[20:24], "big")
    assert (width, height) == tuple(shown(page, "[e.chart.canvas.width, e.chart.canvas.height]"))
    with page.expect_download() as info:
        page.click("#download-csv")
    path = tmp_path / "table.csv"
    info.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert len(rows) == 6  # three targets × two sides
    for cell in page.locator("#explorer-table tr[data-metric='tput_per_gpu'] td[data-side]").all():
        i, side = int(cell.get_attribute("data-target-index")), cell.get_attribute("data-side")
        row = next(r for r in rows if int(r["target_index"]) == i and r["side"] == side)
        assert float(row["tput_per_gpu"]) == float(cell.get_attribute("data-value"))
    heads = page.locator("#explorer-table thead th").all_inner_texts()[1:]
    assert [f"{float(r['target_intvty']):g} tok/s/user · {r['side_label']}" for r in rows] == heads
    assert log["errors"] == [] and log["off_host"] == []


def test_a_390_px_screen_has_no_horizontal_page_overflow(explorer_site, browser):
    base, _ = explorer_site
    page, log = open_explorer(browser, base, width=390)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = page.locator("#explorer-table").evaluate("t => [t.parentElement.scrollWidth, t.parentElement.clientWidth]")
    assert box[0] > box[1]  # the table scrolls inside its box
    controls = page.locator("#controls").bounding_box()
    assert controls["x"] + controls["width"] <= 390 and controls["height"] > 60  # the controls wrap
    assert log["errors"] == []


def test_no_request_leaves_localhost(explorer_site, browser):
    base, _ = explorer_site
    page, log = open_explorer(browser, base)
    page.select_option("#y-metric", "j_per_token")
    page.click("#copy-link")
    assert log["off_host"] == []
    assert any(url.endswith("/assets/chart.umd.min.js") for url in log["local"])
    assert any(url.endswith("/assets/frontier-rules.js") for url in log["local"])
    # the route does catch another host: a fetch from the page is aborted and recorded
    page.evaluate("() => fetch('https://example.com/x').catch(() => null)")
    assert log["off_host"] == ["https://example.com/x"]


def test_trends_load_when_their_side_is_chosen_and_one_that_cannot_is_named(explorer_site, browser):
    """Each side's trend is a script of its own, fetched the first time the side's trend is drawn: the sides the
    page opens with load theirs and no other; a trend script the server cannot give leaves that side's trend line
    empty and is named under the chart, and the rest of the page works."""
    base, _ = explorer_site
    page, log = open_explorer(browser, base)
    chosen = shown(page, "e.state.sides")
    sides = {s["id"]: s for s in data(page)["sides"]}
    fetched = sorted(url.split("/explorer-trends/")[1] for url in log["local"] if "/explorer-trends/" in url)
    assert fetched and fetched == sorted(sides[i]["trend_src"].split("/")[1] for i in chosen if "trend_src" in sides[i])
    assert page.locator("#trend-notes").is_hidden()

    broken, _ = open_explorer(browser, base)
    broken.context.route("**/explorer-trends/*.js", lambda r: r.fulfill(status=404, body="gone"))
    other = next(i for i, s in sides.items() if i not in chosen and "trend_src" in s
                 and s["workload"] == sides[chosen[0]]["workload"])
    broken.check(f"#side-list input[data-side='{other}']")
    assert other in shown(broken, "e.state.sides")
    line = shown(broken, f"e.trendChart.data.datasets.filter(d => d.sideId === {other!r})[0].data")
    assert line == []
    note = broken.locator("#trend-notes")
    assert note.is_visible() and note.inner_text() == f"No trend could be loaded for: {sides[other]['label']} " \
        f"({sides[other]['trend_src']})"
    assert len(shown(broken, "e.cells")) > 0  # the table still reads the frontiers
    assert log["errors"] == []


def python_side(s, workloads):
    """The explorer side as the frontier stage's Side, and its disaggregated flag."""
    w = workloads[s["workload"]]
    return Side(w["model"], w["isl"], w["osl"], s["hw"], s["precision"], s["spec_decoding"], s["framework"],
                w["benchmark_type"]), s["disagg"]


def test_table_cells_equal_python_compare_for_50_random_pairs(explorer_site, browser):
    """50 seeded random (pair, price book, targets) of the two-book sample: every cell the page's script computed
    equals ``compare``'s row on frontiers the frontier stage builds from the runs mart (current runs of the side's
    disaggregation), bit for bit; the sentences shown are ``compare``'s."""
    base, marts = explorer_site
    page, log = open_explorer(browser, base)
    assert_pairs_equal_compare(page, read_mart(marts, "runs"), pairs=50, seed=39)
    assert log["errors"] == []


@pytest.mark.long
def test_table_cells_equal_python_compare_on_the_real_logs(real_logs, run_pipeline, browser):
    """The same over the real result files (627 runs: dozens of sides per workload, disaggregated and agentic
    ones), 40 seeded random pairs, the page opened from disk."""
    run = run_pipeline(real_logs)
    assert run.result.success
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto((run.out_dir / "report" / "explorer.html").as_uri())
    page.wait_for_function("window.__explorer !== undefined")
    assert_pairs_equal_compare(page, run.mart("runs"), pairs=40, seed=7)
    assert errors == []


def assert_pairs_equal_compare(page, runs, pairs, seed):
    """Drive the page (its hash) to ``pairs`` seeded random (two sides of one workload, price book, three targets)
    and hold every cell of ``window.__explorer.cells``, the CSV's sentences and the page's third sentence to
    ``compare`` on ``build_frontiers`` of ``runs`` (the runs mart: its current runs of each side's
    disaggregation)."""
    d = data(page)
    runs = runs.filter(pc.is_null(runs["superseded_by"]))
    disagg = pc.fill_null(runs["disagg"], False)
    rng = random.Random(seed)
    workloads_by_key = {w["key"]: w for w in d["workloads"]}
    by_workload = {}
    for s in d["sides"]:
        by_workload.setdefault(s["workload"], []).append(s)
    workloads = sorted(w for w, ss in by_workload.items() if len(ss) >= 2)
    columns = [c for c in COMPARISON_SCHEMA.names if c in (
        "evaluated_intvty", "target_clamped", "bracket_lo_intvty", "bracket_hi_intvty", "bracket_ratio",
        "bracket_lo_repeat_spread", "bracket_hi_repeat_spread", "implied_cost_per_mtok_hyperscaler",
        "sparse_frontier", "cell_basis", "cell_note", "difference_significant")
        or c.startswith(("tput_per_gpu", "output_", "input_", "cost_per_mtok", "tok_s_per_mw", "measured_tok",
                         "concurrency", "median_intvty_ci"))]
    frontiers_cache = {}

    def frontier_rows(s, book):
        side, split = python_side(s, workloads_by_key)
        key = (side, split)
        if key not in frontiers_cache:
            table = runs.filter(pc.equal(disagg, split)).select(FRONTIER_INPUT_COLUMNS)
            frontiers_cache[key] = build_frontiers(table, [side]).to_pylist()
        return [r for r in frontiers_cache[key] if r["price_book"] == book]

    done = 0
    while done < pairs:
        a, b = rng.sample(by_workload[rng.choice(workloads)], 2)
        if python_side(a, workloads_by_key)[0] == python_side(b, workloads_by_key)[0]:
            continue  # the same stack aggregated and disaggregated: one side id for compare()
        book = rng.choice(sorted(d["books"]))
        lo = min(a["band"][0], b["band"][0]) * 0.7
        hi = max(a["band"][1], b["band"][1]) * 1.3
        targets = [round(rng.uniform(lo, hi), rng.choice([0, 1, 2, 6])) for _ in range(3)]
        targets = [t if t > 0 else 1.0 for t in targets]
        if rng.random() < 0.2:  # now and then a target on a measured point
            targets[0] = rng.choice(a["frontier"][book]["x"])
        hash_ = (f"#w={a['workload']}&s={a['id']},{b['id']}&a={a['id']}&b={b['id']}&book={book}"
                 f"&t={','.join(repr(t) for t in targets)}")
        page.evaluate("h => { location.hash = h; }", hash_.replace("|", "%7C").replace("/", "%2F"))
        page.wait_for_function("([a, b, book]) => window.__explorer.state.a === a && window.__explorer.state.b === b "
                               "&& window.__explorer.state.book === book", arg=[a["id"], b["id"], book])
        cells = shown(page, "e.cells")
        assert [c["target"] for c in cells] == targets
        by_side = frontiers_by_side(frontier_rows(a, book) + frontier_rows(b, book))
        side_a, side_b = python_side(a, workloads_by_key)[0], python_side(b, workloads_by_key)[0]
        rows = compare(Comparison("explorer", side_a, side_b, a["label"], b["label"]), by_side, targets=targets)
        assert len(rows) == 6
        for row in rows:
            cell = cells[row["target_index"] - 1][row["side"]]
            for column in columns:
                assert cell.get(column) == row[column], (a["id"], b["id"], book, targets, row["side"], column)
        csv_rows = list(csv.DictReader(io.StringIO(shown(page, "e.csv"))))
        for row, said in zip(rows, csv_rows):
            assert (said["band_phrase"], said["cost_sentence"], said["tput_sentence"]) == (
                row["band_phrase"], row["cost_sentence"], row["tput_sentence"])
        middle = next(r for r in rows if r["target_index"] == 2 and r["side"] == "a")
        assert page.locator("#sentence-3").inner_text() == headline(middle) + "."
        done += 1


def test_regressions_mart_rows_mark_their_sides_trend(explorer_site, browser, tmp_path):
    """A frontier series' row of the regressions mart is a triangle on its side's trend at its first bad date, in
    its price book only, its change in the tooltip text (``regressions.change_text``); the sample has no
    regression, so the row is made for one side's group and date."""
    from pipeline.comparisons.explorer import explorer_data, write_explorer
    from pipeline.comparisons.regressions import change_text

    _, marts = explorer_site
    runs = read_mart(marts, "runs")
    trend = next(r for r in read_mart(marts, "trends").to_pylist()
                 if r["hw"] == "b200" and r["framework"] == "sglang" and r["precision"] == "fp4"
                 and r["price_book"] == DEFAULT_PRICE_BOOK)
    row = {"series_kind": "frontier", **{k: trend[k] for k in ("model", "isl", "osl", "hw", "framework", "precision",
                                                                 "spec_decoding", "benchmark_type", "x_intvty_stat")},
           "price_book": DEFAULT_PRICE_BOOK, "metric": "tput_per_gpu", "direction": "regression", "status": "new",
           "first_bad_date": trend["run_date"], "mean_before": 1000.0, "mean_after": 800.0, "magnitude_pct": -20.0,
           "target_intvty": 35.0}
    elsewhere = {**row, "price_book": OTHER_BOOK, "first_bad_date": dt.date(2020, 1, 1)}
    data_ = explorer_data(runs, DEFAULT_PRICE_BOOK, [row, elsewhere])
    side = next(s for s in data_["sides"] if s["hw"] == "b200" and s["framework"] == "sglang"
                and s["precision"] == "fp4" and s["spec_decoding"] == trend["spec_decoding"])
    page_path = write_explorer(data_, tmp_path / "report")
    page = browser.new_page()
    page.goto(page_path.as_uri() + f"#w={side['workload']}&s={side['id']}".replace("|", "%7C").replace("/", "%2F"))
    page.wait_for_function("window.__explorer !== undefined")
    marks = shown(page, "e.trendChart.data.datasets.filter(d => d.regressionMarks).map(d => d.data)")
    line = shown(page, "e.trendChart.data.datasets.filter(d => d.sideId)[0].data")
    on_day = next(p["y"] for p in line if p["date"] == str(trend["run_date"]))
    # at the day's value, or at the axis's foot where the day's frontier does not reach the target
    assert marks == [[{"x": (trend["run_date"] - dt.date(1970, 1, 1)).days, "date": str(trend["run_date"]),
                       "y": 0 if on_day is None else on_day,
                       "info": f"regression (new): tput_per_gpu {change_text(row)} at 35 tok/s/user"}]]
    page.select_option("#price-book", OTHER_BOOK)  # the other book's row names a date the side has no trend on
    assert shown(page, "e.trendChart.data.datasets.filter(d => d.regressionMarks).length") == 0
