"""The static report in headless Chromium (Debian's ``chromium``, driven by Playwright), served on localhost:
pages load without console errors, and a screenshot shows the comparison table and the frontier chart
(tests/test_report_page.py opens them from disk and drives the controls)."""

import functools
import http.server
import shutil
import threading

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


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
def test_report_pages_load_cleanly_and_show_table_and_chart(report_server):
    from playwright.sync_api import sync_playwright

    base, tmp = report_server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1100, "height": 1400})
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{base}/index.html")
        links = page.locator("a").all()
        assert len(links) == 16  # every comparison of the sample is listed
        page.get_by_text("MI355X FP4: MTP vs Off Speculative Decoding").click()
        page.wait_for_load_state("networkidle")
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
        for href in [a.get_attribute("href") for a in page.locator("a").all()]:
            page.goto(f"{base}/{href}")
            assert page.locator("#frontier-chart").evaluate("c => Chart.getChart(c) !== undefined"), href
        browser.close()
    assert errors == []
