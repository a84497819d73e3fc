"""The explorer's screenshots in docs/ (docs/explorer.md says what each shows and from which data):

    python benchmarks/screenshots.py --real-logs DIR                  # every step, in temporary folders
    python benchmarks/screenshots.py --real-logs DIR --keep /tmp/shots  # keep the marts there, reuse them next time

1. ``explorer_four_gpus.png``: the sample (``data/sample``) through the pipeline; its DSR1 1024/1024 workload has
   four GPUs (B200, H200, MI355X, GB200), one side of each overlaid.
2. ``explorer_trend.png``: the folder of real result files (``--real-logs``) through the pipeline; the three sides
   of DSR1 1024/1024 measured on the most run dates, read at the middle of their common range.
3. ``explorer_error_bars.png``: neither the sample nor the real result files have repeats, so 5,000 runs from the
   performance harness's generator (``benchmarks/generate.py``: 2 % repeats) go through the pipeline; the two sides
   of one workload with the most frontier points that average repeats, runs hidden.
4. ``explorer_unofficial.png``: ``python -m pipeline overlay`` of the sample's H200 vLLM folder over the sample's
   marts: the folder's runs as unofficial crosses beside the published frontiers.

Headless Chromium (Debian's ``chromium``) driven by Playwright, 1200 px wide.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: ``benchmarks`` importable as a package, as benchmarks/run.py does
DOCS = REPO / "docs"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def marts_of(raw: Path, folder: Path) -> Path:
    """The marts of ``raw`` through the whole pipeline in ``folder`` (reused when ``folder/marts`` has a report),
    with the explorer page written again from the warehouse by this checkout's code."""
    import dagster as dg

    from pipeline.__main__ import materialize_all
    from pipeline.io.paths import pointed_at

    out = folder / "marts"
    if not (out / "report" / "explorer.html").is_file():
        with pointed_at(raw, out, folder / "warehouse.duckdb"):
            result = materialize_all(dg.DagsterInstance.ephemeral(),
                                     {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
        if not result.success:
            sys.exit(f"screenshots: the pipeline failed on {raw}")
    # kept marts show the explorer of this checkout, not of the run that wrote them: rebuilt from the warehouse
    import duckdb

    from pipeline.comparisons.explorer import explorer_data, write_explorer
    from pipeline.comparisons.report import REPORT_PRICE_BOOK
    from pipeline.defs.comparisons.report import explorer_runs

    with duckdb.connect(str(folder / "warehouse.duckdb"), read_only=True) as conn:
        changes = conn.sql("select * from regressions").to_arrow_table().to_pylist()
        write_explorer(explorer_data(explorer_runs(conn), REPORT_PRICE_BOOK, changes), out / "report")
    return out


def view(sides: list[dict], workload: str, **extra: str) -> str:
    """The explorer's hash for these sides (the first two in the table) and settings."""
    parts = {"w": workload, "s": ",".join(s["id"] for s in sides), "a": sides[0]["id"],
             "b": sides[1]["id"] if len(sides) > 1 else "", **extra}
    return "#" + "&".join(f"{k}={quote(v, safe='')}" for k, v in parts.items())


def shoot(browser, page_path: Path, hash_: str, target: Path, element: str) -> None:
    """Open ``page_path`` at ``hash_`` and save the screenshot of ``element``'s box (and its controls above)."""
    page = browser.new_page(viewport={"width": 1200, "height": 1400})
    page.goto(page_path.as_uri() + hash_)
    page.wait_for_function("window.__explorer !== undefined")
    page.locator(element).screenshot(path=str(target))
    page.close()
    print(target)


def choose(page_path: Path, browser) -> dict:
    """The explorer data of a page."""
    page = browser.new_page()
    page.goto(page_path.as_uri())
    data = page.evaluate("JSON.parse(document.getElementById('explorer-data').textContent)")
    page.close()
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real-logs", type=Path, required=True, help="folder of real result files (the trend)")
    parser.add_argument("--keep", type=Path, help="folder to keep (and reuse) the marts in; default: temporary")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("screenshots: Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from benchmarks.generate import generate
    from pipeline.cli.overlay import build_overlay

    work = args.keep or Path(tempfile.mkdtemp(prefix="explorer-shots-"))
    work.mkdir(parents=True, exist_ok=True)
    sample = marts_of(REPO / "data" / "sample", work / "sample")
    raw = work / "generated-raw"
    if not raw.is_dir():
        generate(5000, raw)
    generated = marts_of(raw, work / "generated")
    real = marts_of(args.real_logs.resolve(), work / "real")
    overlay = build_overlay(REPO / "data" / "sample" / "vllm" / "h200", sample, work / "overlay")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        # 1. four GPUs on the sample's DSR1 1024/1024: the side with the most runs of each GPU
        page = sample / "report" / "explorer.html"
        data = choose(page, browser)
        workload = "dsr1|1024/1024"
        best: dict[str, dict] = {}
        for s in data["sides"]:
            if s["workload"] == workload and s["side_runs"] > best.get(s["hw"], {}).get("side_runs", -1):
                best[s["hw"]] = s
        four = [best[hw] for hw in ("b200", "h200", "mi355x", "gb200")]
        shoot(browser, page, view(four, workload), DOCS / "explorer_four_gpus.png", "#explorer-chart-box")
        # 2. the real result files: the three sides of DSR1 1024/1024 with the most run dates
        page = real / "report" / "explorer.html"
        data = choose(page, browser)
        book = data["default_book"]
        workload = "dsr1|1024/1024"
        trio = sorted((s for s in data["sides"] if s["workload"] == workload),
                      key=lambda s: (-len(s["trend"].get(book, [])), s["id"]))[:3]
        lo = max(s["band"][0] for s in trio)
        hi = min(s["band"][1] for s in trio)
        shoot(browser, page, view(trio, workload, trend=f"{(lo + hi) / 2:.0f}"), DOCS / "explorer_trend.png",
              "#trend-chart-box")
        # 3. the generated runs: the two sides with the most frontier points that average repeats
        page = generated / "report" / "explorer.html"
        data = choose(page, browser)
        book = data["default_book"]
        repeats = sorted(data["sides"], key=lambda s: -sum((n or 1) > 1 for n in s["frontier"][book]["repeat_n"]))
        workload = repeats[0]["workload"]
        pair = [s for s in repeats if s["workload"] == workload][:2]
        shoot(browser, page, view(pair, workload, runs="0"), DOCS / "explorer_error_bars.png",
              "#explorer-chart-box")
        # 4. the overlay: the sample's H200 vLLM runs as unofficial crosses over DSR1 1024/1024's frontiers
        data = choose(overlay, browser)
        workload = "dsr1|1024/1024"
        sides = [s for s in data["sides"] if s["workload"] == workload and s["hw"] in ("b200", "mi355x")][:3]
        shoot(browser, overlay, view(sides, workload), DOCS / "explorer_unofficial.png",
              "#explorer-chart-box")
        browser.close()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
