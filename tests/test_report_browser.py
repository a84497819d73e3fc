"""The static report in headless Chromium (Debian's ``chromium``, driven by Playwright), served on localhost:
pages load without console errors, and a screenshot shows the comparison table and the frontier chart
(tests/test_report_page.py opens them from disk and drives the controls)."""

import functools
import http.server
import threading

import pytest
from conftest import CHROMIUM, unrestricted


@pytest.fixture(scope="module")
def report_server(_sample_session_run, tmp_path_factory):
    """The sample's report (the shared session run's, served read-only), on localhost."""
    run = _sample_session_run
    assert run.result.success
    tmp = tmp_path_factory.mktemp("report")  # screenshots go here, not into the shared run
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(run.out_dir / "report"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", tmp
    server.shutdown()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_pages_load_cleanly_and_show_table_and_chart(report_server, browser):
    base, tmp = report_server
    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{base}/index.html")
    links = page.locator("#comparison-list a").all()
    assert len(links) == 16  # every comparison of the sample is listed
    assert page.locator("#explorer-link a").get_attribute("href") == "explorer.html"
    with page.expect_navigation():  # to the clicked page's load event
        page.get_by_text("MI355X FP4: MTP vs Off Speculative Decoding").click()
    assert page.locator("h1").inner_text() == "MI355X FP4: MTP vs Off Speculative Decoding"
    headline = page.locator(".headline").inner_text()
    assert "cheaper per token" in headline and "more tok/s/GPU" in headline and "band" in headline
    table = page.locator("#comparison-table")
    assert table.is_visible()
    assert table.locator("tbody tr").count() == 4  # Throughput, Cost, tok/s/MW, Concurrency (no telemetry)
    chart = page.locator("#frontier-chart")
    assert chart.is_visible()
    # the chart is drawn: Chart.js holds both sides' runs, frontier curves and frontier points
    assert chart.evaluate("c => Chart.getChart(c).data.datasets.filter(d => !d.isTarget).length") == 6
    assert chart.evaluate("c => c.width") > 600
    assert "not defined the same way across engines" in page.locator(".caveat").inner_text()
    shot = tmp / "report_mi355x_fp4_mtp.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    page.goto(f"{base}/index.html")
    for href in [a.get_attribute("href") for a in page.locator("#comparison-list a").all()]:
        page.goto(f"{base}/{href}")
        assert page.locator("#frontier-chart").evaluate("c => Chart.getChart(c) !== undefined"), href
    assert errors == []


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_sentences_after_an_edit_are_the_python_rule_at_the_typed_targets(report_server, _sample_session_run,
                                                                           browser):
    """Typed targets: the three sentences (at the middle target) and each target's line are what
    ``report.sentences`` / ``report.target_sentence`` say of ``compare()``'s rows at those targets; the tie rule
    (< 1.01), half-up percentages, the ratio form at N ≥ 100 and the run-to-run noise wording (95 % intervals,
    every tier) are the Python rule's (``compare.sentences``) on cells made up at the boundaries."""

    from pipeline.comparisons.compare import compare, headline
    from pipeline.comparisons.compare import sentences as sentences_rule
    from pipeline.comparisons.report import sentences, slug, target_sentence
    from pipeline.frontiers.points import frontiers_by_side
    from pipeline.frontiers.sides import enumerate_comparisons
    from pipeline.io.storage import read_mart
    from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

    base, _ = report_server
    marts = _sample_session_run.out_dir
    rows = [r for r in unrestricted(read_mart(marts, "comparisons")).to_pylist()
            if r["title"] == "MI355X FP4: MTP vs Off" and r["price_book"] == DEFAULT_PRICE_BOOK]
    comparison = next(c for c in enumerate_comparisons(read_mart(marts, "runs").to_pylist())
                      if c.comparison_id == rows[0]["comparison_id"])
    by_side = frontiers_by_side([p for p in unrestricted(read_mart(marts, "frontiers")).to_pylist()
                                 if p["price_book"] == DEFAULT_PRICE_BOOK])

    def expected(targets):
        got = compare(comparison, by_side, targets=targets)
        at = {(r["target_index"], r["side"]): r for r in got}
        assert [round(at[(i + 1, "a")]["target_intvty"], 9) for i in range(len(targets))] == targets
        return (sentences([at[(2, "a")], at[(2, "b")]]), [target_sentence(at[(i + 1, "a")]) for i in range(3)],
                [headline(at[(i + 1, "a")]) for i in range(3)])

    def shown(page):
        return ([page.locator(f"#sentence-{i}").inner_text() for i in (1, 2, 3)],
                page.locator("#target-sentences li").all_inner_texts())

    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{base}/{slug(rows[0])}.html")
    page.wait_for_function("window.__comparison !== undefined")
    defaults = sorted({r["target_intvty"] for r in rows})
    three, lines, _ = expected(defaults)
    # at the default targets the script's sentences are the mart's (and the HTML Python wrote)
    assert shown(page) == (three, lines)
    mart_headlines = [headline(r) for r in sorted(rows, key=lambda r: r["target_index"]) if r["side"] == "a"]
    assert [line.split("): ", 1)[1] for line in lines] == [h + "." for h in mart_headlines]

    # typed targets: inside both frontiers, below both (clamped, with the caveat), above Off's last point
    for typed in ([12.5, 37.3, 95.25], [20.0, 61.75, 44.0], [12.5, 95.25, 37.3]):
        for i, target in enumerate(typed, start=1):
            page.fill(f"#target-{i}", repr(target))
        three, lines, heads = expected(typed)
        assert shown(page) == (three, lines), typed
        assert page.locator("#headline-scope").is_visible()
    assert "not measured at this target" in " ".join(three)  # the last batch's middle target is clamped
    assert any("outside its measured range" in h for h in heads)

    # the rule itself at its boundaries: tied below a ratio of 1.01, percentages rounded half up, the ratio form
    # from N = 100 (1.996 → 2.0×, 2.2177 → 2.2×, 5.07 → 5.1×; 1.99 → 99 % still the dashboard's sentence)
    cases = [(1.0, 1.0099, 100.0, 100.5), (1.0, 1.01, 100.0, 101.0), (2.0, 1.0, 100.0, 102.5),
             (1.0, 1.125, 300.0, 200.0), (1.0, 1.005, 100.0, 100.0), (1.0, 1.99, 100.0, 100.0),
             (1.0, 1.996, 100.0, 100.0), (2.2177, 1.0, 100.0, 100.0), (1.0, 5.07, 507.0, 100.0)]
    for cost_a, cost_b, tput_a, tput_b in cases:
        cell = {"target_clamped": False, "sparse_frontier": False, "cell_note": None}
        js = page.evaluate("c => window.__comparison.sentences(c)[2]", {
            "target": 40, "a": {**cell, "cost_per_mtok_hyperscaler": cost_a, "tput_per_gpu": tput_a},
            "b": {**cell, "cost_per_mtok_hyperscaler": cost_b, "tput_per_gpu": tput_b}})
        said = sentences_rule("MTP", "Off", {"cost_per_mtok_hyperscaler": cost_a, "tput_per_gpu": tput_a},
                          {"cost_per_mtok_hyperscaler": cost_b, "tput_per_gpu": tput_b})
        assert js == f"{said['cost_sentence']}; {said['tput_sentence']}.", (cost_a, cost_b, tput_a, tput_b)
    # run-to-run noise: cells with 95 % intervals (tok/s/GPU, and cost at each tier), overlapping, touching,
    # apart, or missing on one side; every tier, with and without a caveat: the one rule, compare.sentences
    def cell(cost, tput, half, price_lo=None):
        out = {"tput_per_gpu": tput, "tput_per_gpu_ci_lo": None if half is None else tput - half,
               "tput_per_gpu_ci_hi": None if half is None else tput + half}
        for tier, factor in (("hyperscaler", 1.0), ("neocloud", 1.3), ("rental", 1.6)):
            out[f"cost_per_mtok_{tier}"] = cost * factor
            lo, hi = out["tput_per_gpu_ci_lo"], out["tput_per_gpu_ci_hi"]
            out[f"cost_per_mtok_{tier}_ci_lo"] = None if half is None else cost * factor * tput / hi
            out[f"cost_per_mtok_{tier}_ci_hi"] = None if half is None else cost * factor * tput / lo
        return out
    noise_cases = [(cell(1.0, 100.0, 8.0), cell(1.05, 95.0, 8.0)),     # 5 % apart, intervals overlap
                   (cell(1.0, 100.0, 2.0), cell(1.25, 80.0, 2.0)),     # 25 % apart, intervals apart
                   (cell(1.0, 100.0, 10.0), cell(1.0 / 1.2, 120.0, 10.0)),  # touching at 110: overlap
                   (cell(1.0, 100.0, 8.0), cell(2.5, 40.0, None)),     # one side without interval
                   (cell(1.0, 100.0, 60.0), cell(3.0, 33.0, 20.0))]    # N ≥ 100 and overlapping
    for a, b in noise_cases:
        for tier in ("hyperscaler", "neocloud", "rental"):
            for caveat in (None, "MTP's values are interpolated across a gap between 8.1 and 65.5 tok/s/user"):
                js = page.evaluate("([a, b, tier, caveat]) => window.__comparison.sentenceRule('MTP', 'Off', a, b, "
                                   "tier, caveat)", [a, b, tier, caveat or ""])
                said = sentences_rule("MTP", "Off", a, b, tier=tier, caveat=caveat)
                assert js == {"cost": said["cost_sentence"], "tput": said["tput_sentence"]}, (a, b, tier)
        js = page.evaluate("c => window.__comparison.sentences(c)[2]", {
            "target": 40, "a": {**a, "target_clamped": False, "cell_basis": "interpolated", "cell_note": None},
            "b": {**b, "target_clamped": False, "cell_basis": "interpolated", "cell_note": None}})
        said = sentences_rule("MTP", "Off", a, b)
        assert js == f"{said['cost_sentence']}; {said['tput_sentence']}."
    said = [sentences_rule("MTP", "Off", a, b) for a, b in noise_cases]
    assert "within run-to-run noise (95 % intervals overlap) on tok/s/GPU" in said[0]["tput_sentence"]
    assert said[1]["tput_sentence"] == "MTP delivers 25% more tok/s/GPU"
    assert said[4]["cost_sentence"] == "MTP and Off are within run-to-run noise (95 % intervals overlap) on cost per token"
    # Python's number formats, including half-to-even ties on exact doubles and %g's exponent form
    for value, digits in ((2.25, 1), (2.35, 1), (0.125, 2), (1234567.25, 1), (-0.04, 1), (9.96, 1), (0.0005, 3)):
        assert page.evaluate("([v, d]) => window.__comparison.pyFixed(v, d)", [value, digits]) == \
            format(value, f".{digits}f"), value
    for value in (40, 37.3, 95.25, 1e-05, 1234567.0, 0.0001, 123456.5, 9.999995):
        assert page.evaluate("v => window.__comparison.fmtG(v)", value) == format(value, "g"), value
    assert errors == []
