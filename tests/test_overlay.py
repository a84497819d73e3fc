"""``python -m pipeline overlay RAW_DIR``: a user's own result files, checked by the pipeline against a temporary
warehouse, drawn as unofficial points on an explorer page over the published sample marts. The published marts and
the warehouse keep every byte; the unofficial runs are marked and on no frontier; a bad file is listed with its
reason."""

import hashlib
import json
import re
import shutil

import pytest
from conftest import CHROMIUM, SAMPLE_DIR

from pipeline.__main__ import main
from pipeline.comparisons.explorer import explorer_data, split_trends
from pipeline.io.storage import read_mart
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK


def digests(run) -> dict[str, str]:
    """sha256 of every file of the run's mart folder and of its warehouse."""
    files = [p for p in run.out_dir.rglob("*") if p.is_file()] + [run.db_path]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def page_data(page_path):
    """The page's embedded JSON, read back as the browser reads it (``\\u003c`` escapes are JSON escapes)."""
    text = page_path.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', text, re.S)
    return json.loads(found.group(1))


@pytest.fixture
def user_folder(tmp_path):
    """A user's folder: the sample's H200 vLLM results (with their power CSVs) and one file that is no JSON."""
    folder = tmp_path / "mine"
    shutil.copytree(SAMPLE_DIR / "vllm" / "h200", folder / "h200")
    (folder / "h200" / "broken_result.json").write_text('{"completed": 10, "total_output_tokens": ', encoding="utf-8")
    return folder


def test_overlay_draws_unofficial_runs_and_writes_no_mart(sample_run, user_folder, tmp_path, capsys):
    before = digests(sample_run)
    out = tmp_path / "page"
    assert main(["overlay", str(user_folder), "--out", str(out), "--no-open"]) == 0
    page = out / "explorer.html"
    assert capsys.readouterr().out.strip() == str(page)
    assert digests(sample_run) == before  # the published marts and the warehouse: every byte as it was
    # no mart beside the page: its scripts and its sides' trends
    assert sorted(p.name for p in out.iterdir()) == ["assets", "explorer-trends", "explorer.html"]
    data = page_data(page)
    # the folder's accepted runs, every one, as unofficial points: 19 result files (DSR1 off, Qwen off and MTP at
    # 6 concurrencies each, and a Qwen run at 256 that failed)
    unofficial = data["unofficial"][DEFAULT_PRICE_BOOK]
    assert len(unofficial["file"]) == 18 and not any("FAILED" in f for f in unofficial["file"])
    assert all(f.startswith("h200/") and f.endswith(".json") for f in unofficial["file"])
    assert set(unofficial["label"]) == {"H200 FP8 vLLM spec Off", "H200 FP8 vLLM spec MTP"}
    # on no frontier: the page's sides are those of the published runs alone
    official, _ = split_trends(explorer_data(read_mart(sample_run.out_dir, "runs"), DEFAULT_PRICE_BOOK))
    assert data["sides"] == json.loads(json.dumps(official["sides"]))
    # the bad file is listed with its reason, the power CSVs as what they are
    reasons = {q["file"]: q["reason"] for q in data["quarantined"]}
    assert reasons["h200/broken_result.json"] == "invalid_json"
    assert not reasons["h200/qwen3.5-397b-a17b_8k1k_h200_fp8_vllm_none_conc256_FAILED.json"].startswith("not_a_run")
    assert all(r == "not_a_run_log:power_telemetry" for f, r in reasons.items() if "/power/" in f)
    text = page.read_text(encoding="utf-8")
    assert "h200/broken_result.json</code>: invalid_json" in text
    assert "Unofficial: 18 run row(s)" in text


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_unofficial_runs_are_marked_in_the_chart(sample_run, user_folder, tmp_path, browser):
    out = tmp_path / "page"
    assert main(["overlay", str(user_folder), "--out", str(out), "--no-open"]) == 0
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto((out / "explorer.html").as_uri() + "#w=dsr1%7C1024%2F1024")
    page.wait_for_function("window.__explorer !== undefined")
    sets = page.evaluate("window.__explorer.chart.data.datasets.map(d => ({label: d.label, n: d.data.length, "
                         "style: d.pointStyle || null, unofficial: !!d.unofficial}))")
    marked = [s for s in sets if s["unofficial"]]
    assert marked == [{"label": "unofficial", "n": 6, "style": "crossRot", "unofficial": True}]  # DSR1's six
    legend = page.evaluate("window.__explorer.chart.legend.legendItems.map(i => i.text)")
    assert "unofficial" in legend
    assert all(s["style"] != "crossRot" for s in sets if not s["unofficial"])
    assert page.locator("#unofficial-note").is_visible()
    assert "invalid_json" in page.locator("#quarantined").inner_text()
    assert errors == []


def test_overlay_of_a_missing_folder_says_so(sample_run, tmp_path, capsys):
    assert main(["overlay", str(tmp_path / "nope"), "--out", str(tmp_path / "page"), "--no-open"]) == 1
    assert capsys.readouterr().err.strip() == f"overlay: {tmp_path / 'nope'} is not a folder"
