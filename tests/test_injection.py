"""Hostile run metadata: model, framework and spec-decoding names from sidecars reach the HTML report, the frontier
charts and the Dagster UI's Markdown as text. Each medium escapes them once, at the point of output (report
``html_text``, plots ``literal_text``, storage ``markdown_text``); these tests hold that on a raw folder whose names
are script tags, event handlers, entity-encoded markup, mathtext, table breakers and a 300-character name."""

import functools
import html
import http.server
import json
import re
import threading
from collections import Counter
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest
from conftest import CHROMIUM, SAMPLE_DIR, UI_CHARTS_CONFIG, reference_knowing_models, unrestricted
from markdown_it import (
    MarkdownIt,  # markdown-it-py, installed with rich (a dagster dependency)
)

from pipeline.comparisons.plots import frontier_chart
from pipeline.comparisons.report import (
    REPORT_PRICE_BOOK,
    comparison_tables_markdown,
    page_title,
    slug,
)
from pipeline.defs.ui import counts_markdown
from pipeline.io.storage import markdown_preview, read_mart

LONG_NAME = "n" * 300
SHOWN = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "&lt;img src=x onerror=alert(1)&gt;",
    '"><svg onload=alert(1)>',
    "javascript:alert(1)",
    r"$\undefinedcmd{x}$",
    "$x^2$",
]
# Names no key may hold (a line break, more than 120 characters): their runs are quarantined at ingest as
# invalid_metadata:<key>, so they never become a label, a file name or a partition folder.
REFUSED = ["a|b\nc", LONG_NAME]
HOSTILE = SHOWN + REFUSED
# A model key names a folder, so one holding '/' or '\' is refused (tests/test_safe_keys.py): those names are the
# framework and spec-decoding of their runs, whose model is model-<i>.
MODEL = {name: name if "/" not in name and "\\" not in name else f"model-{i}" for i, name in enumerate(SHOWN)}
BASE = "qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc{}.json"
# A comparison page's scripts, in order: its data (JSON, not run), the vendored Chart.js, the shared reading rules,
# the page script.
SCRIPTS = [["application/json", None], ["", "assets/chart.umd.min.js"], ["", "assets/frontier-rules.js"],
           ["", "assets/comparison.js"]]


def norm(text: str) -> str:
    """Whitespace as a browser shows it: runs (newlines included) collapsed to one space."""
    return " ".join(text.split())


def hostile_folder(raw: Path) -> Path:
    """Per hostile name H, the sample's MI355X vLLM runs as model H: at FP8 plain runs at conc 32-128 and runs at
    conc 4 and 8 under framework H (a framework comparison "H vs vLLM"); at FP4 the same with spec_decoding H
    instead (a spec-decoding comparison "H.upper() vs Off"); and FP4 vs FP8 (a precision comparison). The sides
    of the first two do not overlap in interactivity, so targets are clamped and the clamped-target note names
    the hostile side. A REFUSED name is not used as a model (model ``refused-<i>`` instead, so its plain runs
    still make a precision comparison), nor a name with a path separator (``MODEL``: model ``model-<i>``); one
    more run has the 300-character name as its model."""
    source = SAMPLE_DIR / "vllm" / "mi355x"
    raw.mkdir(parents=True)
    for i, name in enumerate(HOSTILE):
        for group, concs, keys in (("fp8", (32, 64, 128), {}), ("framework", (4, 8), {"framework": name}),
                                   ("fp4", (32, 64, 128), {"precision": "fp4"}),
                                   ("spec", (4, 8), {"precision": "fp4", "spec_decoding": name})):
            for conc in concs:
                log = raw / f"h{i}_{group}_{BASE.format(conc)}"
                run = json.loads((source / BASE.format(conc)).read_text(encoding="utf-8"))
                run["label"] = log.name  # distinct content: not a duplicate of the other copies
                log.write_text(json.dumps(run), encoding="utf-8")
                meta = json.loads((source / f"{BASE.format(conc)}.meta.json").read_text(encoding="utf-8"))
                for telemetry in ("power_log", "start_time_unix"):
                    meta.pop(telemetry)
                meta.update(model=MODEL.get(name, f"refused-{i}"), **keys)
                Path(f"{log}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    log = raw / "long_model.json"
    log.write_text((source / BASE.format(32)).read_text(encoding="utf-8"), encoding="utf-8")
    meta = json.loads((source / f"{BASE.format(32)}.meta.json").read_text(encoding="utf-8"))
    Path(f"{log}.meta.json").write_text(json.dumps({**meta, "model": LONG_NAME}), encoding="utf-8")
    return raw


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """The whole pipeline over ``hostile_folder``: (run result, marts folder)."""
    from pipeline.__main__ import materialize_all

    tmp = tmp_path_factory.mktemp("hostile")
    raw = hostile_folder(tmp / "raw")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIPELINE_RAW_DIR", str(raw))
        mp.setenv("PIPELINE_OUT_DIR", str(tmp / "marts"))
        mp.setenv("PIPELINE_DB_PATH", str(tmp / "w.duckdb"))
        # the hostile names are models the user made known: only their text is under test here
        mp.setenv("PIPELINE_REFERENCE_DIR", str(reference_knowing_models(raw, tmp / "reference")))
        # the UI's charts too (a throwaway instance draws none by default): their headings carry the names
        result = materialize_all(dg.DagsterInstance.ephemeral(), UI_CHARTS_CONFIG)
    return result, tmp / "marts"


# --- the escape helpers, by hand ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("MI355X FP4: MTP vs Off", "MI355X FP4: MTP vs Off"),
    ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
    ("&lt;img src=x onerror=alert(1)&gt;", "&amp;lt;img src=x onerror=alert(1)&amp;gt;"),
    ("&LT;IMG SRC=X ONERROR=ALERT(1)&GT;", "&amp;LT;IMG SRC=X ONERROR=ALERT(1)&amp;GT;"),
    ('"><svg onload=alert(1)>', "&quot;&gt;&lt;svg onload=alert(1)&gt;"),
    ("' onmouseover='alert(1)", "&#x27; onmouseover=&#x27;alert(1)"),
    ("javascript:alert(1)", "javascript:alert(1)"),
    ("a|b\nc", "a|b\nc"),
    (1024, "1024"),
])
def test_html_text(value, expected):
    from pipeline.comparisons.report import html_text

    assert html_text(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("TRT-LLM", "TRT-LLM"),
    ("not_a_run_log:documentation", "not_a_run_log:documentation"),
    ("a|b\nc", r"a\|b c"),
    ("one \r\n\n  two\u2028three\rfour", "one two three four"),
    ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("&lt;img src=x onerror=alert(1)&gt;", "&amp;lt;img src=x onerror=alert(1)&amp;gt;"),
    ('"><svg onload=alert(1)>', '"&gt;&lt;svg onload=alert(1)&gt;'),
    ("[x](javascript:alert(1))", r"\[x\](javascript:alert(1))"),
    ("![t](http://x/t.png)", r"!\[t\](http://x/t.png)"),
    ("`a|b`", r"\`a\|b\`"),
    (r"a\|b", r"a\\\|b"),
    (r"$\undefinedcmd{x}$", r"$\\undefinedcmd{x}$"),
    (None, "None"),
])
def test_markdown_text(value, expected):
    from pipeline.io.storage import markdown_text

    assert markdown_text(value) == expected


def test_literal_text_draws_mathtext_as_typed(tmp_path):
    import matplotlib
    from matplotlib.figure import Figure

    from pipeline.comparisons.plots import literal_text

    fig = Figure()
    title = fig.subplots().set_title(r"$\undefinedcmd{x}$")
    with pytest.raises(ValueError, match="undefinedcmd"):
        fig.savefig(tmp_path / "parsed.png")  # what a raw label does
    literal_text(title)
    fig.savefig(tmp_path / "literal.png")
    assert (title.get_parse_math(), title.get_usetex()) == (False, False)
    with matplotlib.rc_context({"text.usetex": True}):
        label = Figure().subplots().set_xlabel("$x^2$")
    literal_text(label)
    assert (label.get_parse_math(), label.get_usetex()) == (False, False)


def test_frontier_chart_with_hostile_labels(tmp_path):
    sides = [{"label": label, "runs": [(10, 900), (20, 700)], "frontier": [(10, 900), (20, 700)]}
             for label in (r"$\undefinedcmd{x}$", "_underscore")]
    path = frontier_chart(r"MI355X FP8: $\undefinedcmd{x}$ vs $x^2$", sides, [12, 15, 18], tmp_path / "c.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_long_names_give_short_unique_slugs():
    side = "dsr1|1024/1024|{hw}|{precision}|spec=all|framework={framework}"
    row = {"kind": "framework", "title": "B200 FP4: SGLang vs TRT-LLM", "model": "dsr1", "isl": 1024, "osl": 1024,
           "comparison_id": "framework:" + "~".join(side.format(hw="b200", precision="fp4", framework=f)
                                                    for f in ("sglang", "trtllm"))}
    assert slug(row) == "framework-b200-fp4-sglang-vs-trt-llm-dsr1-1024-1024"  # short slugs are unchanged
    long_a, long_b = ({**row, "title": f"MI355X FP8: {LONG_NAME}{end} vs vLLM",
                       "comparison_id": "framework:" + "~".join(side.format(hw="mi355x", precision="fp8", framework=f)
                                                                for f in (LONG_NAME + end, "vllm"))} for end in "ab")
    assert slug(long_a) != slug(long_b)
    assert all(len(slug(r)) <= 120 and re.fullmatch(r"[a-z0-9-]+", slug(r)) for r in (long_a, long_b))


# --- the whole pipeline on hostile names -------------------------------------------------------------------------

def test_pipeline_runs_to_the_report_on_hostile_names(hostile_run):
    result, out = hostile_run
    assert result.success
    comparisons = unrestricted(read_mart(out, "comparisons")).to_pylist()
    titles = {r["title"] for r in comparisons}
    for name in SHOWN:
        assert f"MI355X FP8: {name} vs vLLM" in titles
        assert f"MI355X FP4: {name.upper()} vs Off" in titles
    assert len({r["comparison_id"] for r in comparisons if r["kind"] == "precision"}) == len(HOSTILE)
    # the index, the explorer and the comparison pages
    assert len(list((out / "report").glob("*.html"))) == 2 + 3 * len(SHOWN) + len(REFUSED)
    assert not (out / "report" / "img").exists()  # charts are drawn in the page (canvas), no PNG files
    # refused names: each one's two framework runs and two spec runs, and the run whose model is 300 characters
    reasons = Counter((r["source_file"].split("_")[0], r["source_file"].split("_")[1], r["reason_code"])
                      for r in read_mart(out, "quarantine").to_pylist() if r["reason_code"].startswith("invalid"))
    index = {name: i for i, name in enumerate(HOSTILE)}
    assert reasons == Counter({
        **{(f"h{index[name]}", "framework", "invalid_metadata:framework"): 2 for name in REFUSED},
        **{(f"h{index[name]}", "spec", "invalid_metadata:spec_decoding"): 2 for name in REFUSED},
        ("long", "model.json", "invalid_metadata:model"): 1})


@pytest.mark.long
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_shows_hostile_names_as_text_in_chromium(hostile_run, browser):
    _, out = hostile_run
    rows = [r for r in unrestricted(read_mart(out, "comparisons")).to_pylist() if r["price_book"] == REPORT_PRICE_BOOK]
    by_page = {f"{slug(r)}.html": r for r in rows}
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out / "report"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    dialogs: list[str] = []
    errors: list[str] = []
    texts: dict[str, str] = {}
    edited: dict[str, str] = {}
    try:
        page = browser.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # every URL the page asks for: after its load event, nothing but the page and its own scripts may
        # have been requested (an injected image, style or script would be fetched by then)
        requested: list[str] = []
        # (the browser's own /favicon.ico request, which no page asks for, is left out)
        page.on("request", lambda request: requested.append(request.url.removeprefix(f"{base}/"))
                if request.url != f"{base}/favicon.ico" else None)
        page.goto(f"{base}/index.html", wait_until="load")
        assert (dialogs, errors) == ([], []), "index.html"
        assert requested == ["index.html", "assets/index.js"], requested
        hrefs = [a.get_attribute("href") for a in page.locator("a").all()]
        assert hrefs.count("explorer.html") == 1  # the explorer, read at the end
        hrefs = [h for h in hrefs if h != "explorer.html"]
        assert sorted(hrefs) == sorted(by_page)
        index_text = norm(page.locator("body").inner_text())
        for row in by_page.values():
            assert norm(page_title(row)) in index_text
        # nothing injected: the filter script is the index's only script, no svg or img element
        assert page.locator("svg, img").count() == 0
        assert [s.get_attribute("src") for s in page.locator("script").all()] == ["assets/index.js"]
        # the filters' options hold the hostile models as text
        models = page.locator("#filter-model option").all_inner_texts()
        assert {norm(MODEL[name]) for name in SHOWN} <= {norm(m) for m in models}
        page.select_option("#filter-model", MODEL[SHOWN[1]])
        assert page.locator("#comparison-list li:visible").count() == 3  # its framework, spec and precision pages
        assert (dialogs, errors) == ([], []), "index.html filtered"
        for href in hrefs:
            requested.clear()
            page.goto(f"{base}/{href}", wait_until="load")
            assert (dialogs, errors) == ([], []), href  # no script ran
            # no injected resource was fetched: the page and its own script files (the browser may serve them cached)
            assert set(requested) <= {href, "assets/chart.umd.min.js", "assets/frontier-rules.js",
                                      "assets/comparison.js"} and requested[0] == href, (href, requested)
            row = by_page[href]
            assert norm(page.locator("h1").inner_text()) == norm(page_title(row)), href
            assert norm(page.title()) == norm(page_title(row)), href
            assert norm(page.locator(".sub").first.inner_text()).startswith(norm(row["model"])), href
            # nothing injected: the page's own three scripts (its data as JSON, Chart.js, the page script), the
            # chart's canvas, no svg or img element
            assert page.locator("script").evaluate_all(
                "els => els.map(e => [e.type, e.getAttribute('src')])") == SCRIPTS, href
            assert page.locator("svg, img").count() == 0, href
            assert page.locator("canvas").count() == 1, href
            assert page.locator("#frontier-chart").evaluate("c => Chart.getChart(c) !== undefined"), href
            data = json.loads(page.locator("#page-data").text_content())
            assert row["side_label"] in data["labels"].values(), href  # the label survives JSON as typed
            texts[href] = norm(page.locator("body").inner_text())
            # the script's redraw (a typed target beyond every frontier) shows the labels as text too
            page.fill("#target-3", "100000")
            assert (dialogs, errors) == ([], []), href
            assert page.locator("svg, img").count() == 0, href
            assert page.locator("script").count() == len(SCRIPTS), href
            edited[href] = norm(page.locator("body").inner_text())
        # the explorer: its data as JSON, Chart.js, the shared rules, its script, and besides them (in the
        # head, where its script adds them as sides are drawn) only the trend scripts its own data names
        # (explorer-trends/<n>.js); every workload's side list, chart legend and table hold the hostile labels
        # as text
        page.goto(f"{base}/explorer.html")
        page.wait_for_function("window.__explorer !== undefined && window.__explorer.trendsPending === 0")
        head = page.locator("head script").evaluate_all("els => els.map(e => [e.type, e.getAttribute('src')])")
        body = page.locator("body script").evaluate_all("els => els.map(e => [e.type, e.getAttribute('src')])")
        trend_sources = page.evaluate("window.__explorer.data.sides.map(s => s.trend_src).filter(Boolean)")
        assert body == [["application/json", None], ["", "assets/chart.umd.min.js"],
                        ["", "assets/frontier-rules.js"], ["", "assets/explorer.js"]]
        assert head and all(kind == "" and src in trend_sources for kind, src in head)
        assert all(src.startswith("explorer-trends/") and src.endswith(".js") for src in trend_sources)
        explorer_texts = []
        for workload in page.locator("#workload option").evaluate_all("os => os.map(o => o.value)"):
            page.select_option("#workload", workload)
            explorer_texts.append(norm(page.locator("body").inner_text()))
            explorer_texts.append(norm(" ".join(page.evaluate(
                "window.__explorer.chart.legend.legendItems.map(i => i.text)"))))
            assert (dialogs, errors) == ([], []), workload
            assert page.locator("svg, img").count() == 0, workload
        explorer_text = " ".join(explorer_texts)
    finally:
        server.shutdown()
    for name in SHOWN:
        assert f"MI355X FP8 {norm(name)} spec Off" in explorer_text, name  # its framework's side
        assert f"MI355X FP4 vLLM spec {norm(name.upper())}" in explorer_text, name  # its spec decoding's side
        framework_pages = [t for t in texts.values() if f"MI355X FP8: {norm(name)} vs vLLM Framework" in t]
        spec_pages = [t for t in texts.values() if f"MI355X FP4: {norm(name.upper())} vs Off Speculative" in t]
        assert len(framework_pages) == len(spec_pages) == 1, name
        # the side label in the table header, the sentences and the clamped-target note
        for text, label in ((framework_pages[0], name), (spec_pages[0], name.upper())):
            assert f"tok/s/user · {norm(label)}" in text, name
            assert f"{norm(label)} delivers" in text, name
            assert re.search(rf"Not measured at the target: .*{re.escape(norm(label))} is outside its measured range",
                             text), name
        framework_edited = [t for t in edited.values() if f"MI355X FP8: {norm(name)} vs vLLM Framework" in t]
        spec_edited = [t for t in edited.values() if f"MI355X FP4: {norm(name.upper())} vs Off Speculative" in t]
        for text, label in ((framework_edited[0], name), (spec_edited[0], name.upper())):
            assert f"100000 tok/s/user · {norm(label)}" in text, name
            assert re.search(rf"at 100000 tok/s/user, {re.escape(norm(label))} is outside its measured range: its "
                             rf"frontier ends at [0-9.]+ tok/s/user, below the 100000 tok/s/user target", text), name


# --- Markdown in the Dagster UI ----------------------------------------------------------------------------------

def raw_tables(text: str) -> list[list[str]]:
    """The GFM tables of a Markdown text as written: from a header line followed by a ``|---|`` line to the next
    blank line, every line (a value's line break would put part of a row on a line of its own)."""
    lines = text.split("\n")
    tables, i = [], 0
    while i + 1 < len(lines):
        if re.fullmatch(r"\|(-+\|)+", lines[i + 1]):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            tables.append(lines[i:end])
            i = end
        else:
            i += 1
    return tables


def unescaped_pipes(line: str) -> int:
    """The ``|`` of a Markdown line that split cells (a backslash escapes the character after it)."""
    count, escaped = 0, False
    for char in line:
        count += char == "|" and not escaped
        escaped = char == "\\" and not escaped
    return count


def rendered_tables(text: str) -> list[list[list[str]]]:
    """The GFM tables of a Markdown text as rendered (markdown-it-py with raw HTML allowed, the most permissive
    renderer): per table, per row, the cells' text as shown. Fails when the rendering holds an element other than
    a table's or a paragraph's (a value rendered as markup: script, img, a, code …)."""
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", rendered))
    assert tags <= {"table", "thead", "tbody", "tr", "th", "td", "p", "strong"}, tags
    return [[[html.unescape(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)]
             for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)]
            for table in re.findall(r"<table>(.*?)</table>", rendered, flags=re.S)]


def assert_literal_tables(text: str, columns: int) -> list[list[list[str]]]:
    """No raw ``<`` in the Markdown; every line of every table is one row of ``columns`` cells, as written and as
    rendered. Returns the rendered tables."""
    assert "<" not in text
    written = raw_tables(text)
    assert written
    for table in written:
        assert all(line.startswith("|") and line.endswith("|") for line in table), table
        assert [unescaped_pipes(line) for line in table] == [columns + 1] * len(table), table
    rendered = rendered_tables(text)
    assert [len(table) for table in rendered] == [len(table) - 1 for table in written]  # the |---| line
    for table in rendered:
        assert [len(row) for row in table] == [columns] * len(table), table
    return rendered


def test_comparison_tables_markdown_keeps_hostile_names_literal(hostile_run):
    _, out = hostile_run
    rows = [r for r in unrestricted(read_mart(out, "comparisons")).to_pylist() if r["price_book"] == REPORT_PRICE_BOOK]
    text = comparison_tables_markdown(rows)
    tables = assert_literal_tables(text, columns=7)
    assert len(tables) == 3 * len(SHOWN) + len(REFUSED)
    assert all(len(table) == 1 + 6 for table in tables)  # header, 3 targets x 2 sides (7 columns each)
    labels = {row[1] for table in tables for row in table[1:]}
    for name in SHOWN:
        assert {norm(name), norm(name.upper())} <= labels, name


def test_markdown_preview_keeps_hostile_values_literal(hostile_run):
    _, out = hostile_run
    table = unrestricted(read_mart(out, "comparisons"))
    columns = ["title", "model", "side_label", "tput_per_gpu", "cost_sentence"]
    text = markdown_preview(table, columns, limit=table.num_rows)
    (rendered,) = assert_literal_tables(text, columns=len(columns))
    assert rendered[0] == columns
    shown = {cell for row in rendered[1:] for cell in row}
    assert {norm(r["side_label"]) for r in table.to_pylist()} <= shown
    hostile = pa.table({"framework": HOSTILE, "runs": list(range(len(HOSTILE)))})
    (rendered,) = assert_literal_tables(markdown_preview(hostile), columns=2)
    assert [row[0] for row in rendered[1:]] == [norm(name) for name in HOSTILE]


def test_counts_markdown_keeps_hostile_keys_literal():
    counts = {name: i + 1 for i, name in enumerate(HOSTILE)}
    (rendered,) = assert_literal_tables(counts_markdown(counts, "framework <b>").md_str, columns=2)
    assert rendered[0][0] == "framework <b>"
    assert {row[0] for row in rendered[1:]} == {norm(name) for name in HOSTILE}


def assert_literal_charts(text: str) -> None:
    """A chart list of the UI (``report.charts_markdown``) as rendered: only headings, paragraphs and one inline PNG
    per heading, whose alt text is the heading's text as typed; no link, script or other markup from a name."""
    rendered = MarkdownIt("commonmark", {"html": True}).render(text)
    tags = set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", rendered))
    assert tags <= {"h3", "p", "img"}, tags
    headings = [html.unescape(h) for h in re.findall(r"<h3>(.*?)</h3>", rendered, flags=re.S)]
    images = re.findall(r'<img src="([^"]*)" alt="([^"]*)"', rendered)
    assert headings and len(images) == len(headings)
    assert all(src.startswith("data:image/png;base64,") for src, _ in images)
    assert [html.unescape(alt) for _, alt in images] == headings


def test_every_markdown_metadata_of_the_run_is_literal(hostile_run):
    """What the Dagster UI shows for every asset of the hostile run: no raw HTML, every table row whole."""
    result, _ = hostile_run
    seen = 0
    for event in result.all_events:
        if event.event_type_value != "ASSET_MATERIALIZATION":
            continue
        for key, value in event.event_specific_data.materialization.metadata.items():
            if not isinstance(value, dg.MarkdownMetadataValue):
                continue
            assert "<" not in value.md_str, key
            if key == "frontier_charts":
                assert_literal_charts(value.md_str)
                seen += 1
                continue
            if key == "headlines":  # headings and paragraphs only: a hostile name stays text
                rendered = MarkdownIt("commonmark", {"html": True}).render(value.md_str)
                assert set(re.findall(r"</?([a-zA-Z][a-zA-Z0-9]*)", rendered)) <= {"h3", "p", "code"}, rendered
                seen += 1
                continue
            for table in raw_tables(value.md_str):
                assert len({unescaped_pipes(line) for line in table}) == 1, (key, table)
            rendered_tables(value.md_str)
            seen += 1
    assert seen >= 10
