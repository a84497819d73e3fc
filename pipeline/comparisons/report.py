"""The static comparison report: ``<out_dir>/report/index.html`` (counts per kind, headline comparisons first,
filters by model, GPU, precision and kind) and one interactive page per comparison, read like the InferenceX seed
pages ("MI355X FP4: MTP vs Off Speculative Decoding"): three sentences, the table Throughput / Cost / tok/s/MW
(all-in and, where telemetry exists, measured) / Concurrency at three targets the reader can edit, a price-book and
cost-tier selector, an interactive chart of both frontiers and their raw runs, a CSV download, and the
cross-engine caveat. Every page is one static file plus ``assets/`` (its script and the vendored Chart.js): it
opens from disk, with no server and no network.

The page's script (``static/comparison.js``) reads each side's frontier points from a JSON element and evaluates
the pipeline's spline operation for operation, so its cells equal ``compare.compare`` at any target, clamped and
noted as the marts are (docs/metrics.md); the rules' constants (tie, sparse and gap ratios, the repeat spread
limit) reach it in that JSON, never as a second literal. Where repeats give 95 % intervals a table cell shows them
("1,721.3 [1,690.2–1,752.4]"), and the sentences say "within run-to-run noise" where the sides' intervals overlap.

Labels, titles and model names come from user-supplied run metadata, so every value written into the HTML passes
``html_text`` and every value written into the UI's Markdown passes ``markdown_text``, at the point of output.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.comparisons.compare import GAP_RATIO, REPEAT_SPREAD_LIMIT, SPARSE_RATIO, TIE_RATIO, headline
from pipeline.comparisons.confidence import COMPARISON_CI_COLUMNS, price_per_mtok, whole_interval_columns
from pipeline.comparisons.plots import SIDE_COLORS, frontier_chart, latency_cdf_chart, x_axis_label
from pipeline.frontiers.points import OPTIONAL_METRICS, SPLINED_METRICS
from pipeline.frontiers.sides import POOLED, Side, run_fixed_key, sides_of
from pipeline.ingest.keys import FRAMEWORK_LABELS, normalize_framework, normalize_spec
from pipeline.ingest.schema import AGENTIC_TRACES
from pipeline.io.storage import markdown_text
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK, PRICE_TIERS

KIND_SUFFIX = {"spec_decoding": "Speculative Decoding", "precision": "Precision", "hardware": "Hardware",
               "framework": "Framework"}
KIND_ORDER = ("spec_decoding", "precision", "hardware", "framework")
CAVEAT = ("Acceptance rates are not defined the same way across engines: vLLM's acceptance length counts the bonus "
          "token (1 + accepted/drafts), SGLang reports a server-side average accept length, TRT-LLM reports tokens "
          "per iteration. Compare acceptance only within one engine.")
_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1040px;margin:2rem auto;padding:0 1rem;
color:#212529}h1{font-size:1.6rem;margin-bottom:.2rem}.sub{color:#6c757d;margin-top:0}table{border-collapse:collapse;
margin:1rem 0;width:100%}th,td{border:1px solid #dee2e6;padding:.35rem .6rem;text-align:right}th:first-child,
td:first-child{text-align:left}thead th{background:#f1f3f5}.caveat{background:#fff4e6;border-left:4px solid #fd7e14;
padding:.6rem 1rem}.headline p{margin:.3rem 0}a{color:#1c7ed6}.controls{display:flex;flex-wrap:wrap;gap:.5rem 1rem;
align-items:center;margin:1rem 0;padding:.6rem;background:#f8f9fa;border:1px solid #dee2e6}.controls input{width:6rem}.controls input[type=checkbox]{width:auto}
.controls input[aria-invalid=true]{outline:2px solid #e03131}td.noted{background:#fff4e6}td.noted::after{content:" †";
color:#d9480f}.notes{background:#fff4e6;padding:.4rem .8rem}.notes::before{content:"† "}.hint,.scope{color:#6c757d;
font-size:.9rem}.chart{position:relative;height:480px;border:1px solid #dee2e6;margin:1rem 0}#summary{width:auto}
#comparison-list li{margin:.35rem 0}.kind{display:inline-block;min-width:11rem;color:#6c757d}
.headline-tag{background:#1c7ed6;color:#fff;border-radius:3px;padding:0 .3rem;font-size:.8rem}
.scroll{overflow-x:auto;max-width:100%}.scroll table{width:auto;min-width:100%}fieldset.controls{display:block}
.side-choice{display:inline-block;margin:.15rem .8rem .15rem 0}.side-choice[hidden]{display:none}.swatch{font-size:1.1rem}
@media (max-width:600px){body{margin:1rem auto;padding:0 .5rem}.chart{height:360px}.controls select{max-width:100%}}
"""


# The page scripts and the vendored charting library (pinned; vendor/README.md), copied into ``report/assets/``.
STATIC_DIR = Path(__file__).parent / "static"
VENDOR_DIR = Path(__file__).parent / "vendor"
CHART_JS = "chart.umd.min.js"
# The pipeline's reading rules in JavaScript (spline, cell rule, band, sentences, number formats), one script that
# the comparison pages and the explorer both load before their own.
RULES_JS = "frontier-rules.js"
STATIC_SCRIPTS = (RULES_JS, "comparison.js", "index.js", "explorer.js")
# The price book the report pages and the UI's comparison tables show (every book is in the marts).
REPORT_PRICE_BOOK = DEFAULT_PRICE_BOOK
MAX_TABLES_IN_UI = 60
# Charts the report asset's UI metadata embeds (about 55 kB of base64 each); the rest are in the HTML report.
MAX_CHARTS_IN_UI = 24
# Slugs longer than this are cut and given a hash, so a file name stays well under the 255-byte limit of common file
# systems however long a model or framework name is.
MAX_SLUG = 120
_WORD = re.compile(r"[a-z0-9]+")
# Framework keys whose label the readable page name spells in words of its own (FRAMEWORK_LABELS: "dynamo-trt" is
# "Dynamo TRT-LLM"); "trt" is not one, normalization makes it "trtllm", whose label it shares.
_LABELLED_FRAMEWORKS = frozenset(k for k in FRAMEWORK_LABELS if normalize_framework(k) == k)


def html_text(value: object) -> str:
    """``value`` as HTML text or as a quoted attribute value (the report's pages and index): ``&``, ``<``, ``>``,
    ``"`` and ``'`` escaped (``html.escape`` with ``quote=True``), so a label such as ``<img src=x onerror=…>`` is
    shown as typed and never parsed as markup."""
    return html.escape(str(value), quote=True)


def comparison_tables_markdown(rows: list[dict]) -> str:
    """One small Markdown table per comparison (the seed pages' Throughput / Cost / tok/s/MW / Concurrency at the
    targets), the first ``MAX_TABLES_IN_UI`` of them; the rest are in the mart and the HTML report. Text values
    (title, model, side label, sentences) pass ``markdown_text``, so they show literally in the Dagster UI."""
    by_id: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_id[row["comparison_id"]].append(row)
    parts = []
    for comparison_id in sorted(by_id)[:MAX_TABLES_IN_UI]:
        mine = sorted(by_id[comparison_id], key=lambda r: (r["target_index"], r["side"]))
        first = mine[0]
        parts.append(f"**{markdown_text(first['title'])}** ({markdown_text(first['model'])} "
                     f"{_lengths(first)})\n\n"
                     "| target | side | tok/s/GPU | $/M tok | tok/s/MW | conc | read |\n|---|---|---|---|---|---|---|")
        parts += [f"| {r['target_intvty']:g} | {markdown_text(r['side_label'])} | {r['tput_per_gpu']:,.1f} | "
                  f"{r['cost_per_mtok_hyperscaler']:.3f} | {r['tok_s_per_mw']:,.0f} | {r['concurrency']:.1f} | "
                  f"{_how_read(r)} |" for r in mine]
        parts.append(f"\n{markdown_text(headline(mine[-1]))} (at {mine[-1]['target_intvty']:g})\n")
    if len(by_id) > MAX_TABLES_IN_UI:
        parts.append(f"… {len(by_id) - MAX_TABLES_IN_UI} more comparisons in comparisons.parquet and the report")
    return "\n".join(parts)


def _how_read(row: Mapping[str, Any]) -> str:
    """How a cell was read off its frontier, for the UI tables: its ``cell_basis`` (``measured``,
    ``interpolated``, ``interpolated_gap`` or ``clamped``; docs/metrics.md section 12a)."""
    return row["cell_basis"]


def workload(row: Mapping[str, Any]) -> str:
    """The side's workload as the pages print it: ``ISL/OSL 1024/1024``, or ``agentic traces`` (no ISL/OSL)."""
    if row.get("benchmark_type") == AGENTIC_TRACES:
        return "agentic traces"
    return f"ISL/OSL {row['isl']}/{row['osl']}"


def _lengths(row: Mapping[str, Any]) -> str:
    """``1024/1024`` (ISL/OSL) in the index and the UI summary, or ``agentic traces``."""
    return "agentic traces" if row.get("benchmark_type") == AGENTIC_TRACES else f"{row['isl']}/{row['osl']}"


def slug(row: Mapping[str, Any]) -> str:
    """The page name of a comparison (a ``comparisons`` mart row: ``kind``, ``title``, ``model``, ``isl``,
    ``osl``, ``benchmark_type``, ``comparison_id``): its readable name, the words of kind, title, model and
    ISL/OSL or ``agentic`` joined by ``-`` ([a-z0-9-] only), e.g. ``framework-b200-fp4-sglang-vs-trt-llm-dsr1-1024-1024``.

    Two different comparisons never share a page name: the readable name alone is kept only when it spells every
    key of the comparison (``_says_every_key``); otherwise, or when it is longer than ``MAX_SLUG``, its first
    characters end in ``-`` and 12 hex digits of the sha256 of ``comparison_id`` (one id per comparison). A
    readable name never ends in 12 hex digits (its last word is the OSL, at most 10 digits, or ``agentic``), so it
    is never a hashed one.
    """
    lengths = "agentic" if row.get("benchmark_type") == AGENTIC_TRACES else f"{row['isl']} {row['osl']}"
    text = f"{row['kind']} {row['title']} {row['model']} {lengths}"
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(name) > MAX_SLUG or not _says_every_key(row["comparison_id"]):
        digest = hashlib.sha256(row["comparison_id"].encode()).hexdigest()[:12]
        name = f"{name[:MAX_SLUG - 13].rstrip('-')}-{digest}"
    return name


def _says_every_key(comparison_id: str) -> bool:
    """Whether the readable page name of ``comparison_id`` can be read back to it: the model, GPUs and precisions
    are one word each ([a-z0-9]+), so they sit at fixed places among the words; a compared spec-decoding key is
    one word that normalization leaves as it is (not ``off``, which is ``none``, labelled Off); a compared
    framework is a labelled one (``_LABELLED_FRAMEWORKS``) or one word that no label spells and is not ``vs``, so
    the first ``vs`` splits the two framework labels; ISL/OSL are numbers or ``agentic``."""
    parsed = sides_of(comparison_id)
    if parsed is None or parsed[0] not in KIND_SUFFIX:
        return False
    _, a, b = parsed
    if not all(_WORD.fullmatch(key) for key in (a.model, b.model, a.hw, b.hw, a.precision, b.precision)):
        return False
    specs = all(spec == POOLED or (_WORD.fullmatch(spec) and normalize_spec(spec) == spec)
                for spec in (a.spec_decoding, b.spec_decoding))
    frameworks = all(f == POOLED or f in _LABELLED_FRAMEWORKS
                     or (_WORD.fullmatch(f) and f not in FRAMEWORK_LABELS and f != "vs")
                     for f in (a.framework, b.framework))
    return bool(specs and frameworks)


def page_title(row: Mapping[str, Any]) -> str:
    """Seed-page title: the comparison title plus its kind, e.g. "MI355X FP4: MTP vs Off Speculative Decoding"."""
    return f"{row['title']} {KIND_SUFFIX[row['kind']]}"


def sentences(rows_at_target: Sequence[Mapping[str, Any]]) -> list[str]:
    """The seed page's three sentences at one target: where it sits in the band, both sides' values, and
    "N% cheaper per token; N% more tok/s/GPU" (hyperscaler cost; ``compare.sentences``' rule: the ratio form at
    N ≥ 100, "within run-to-run noise" where the sides' 95 % intervals overlap). A side is marked in the second
    sentence by its ``cell_basis`` (clamped: "not measured at this target"; interpolated_gap: "interpolated across a
    gap"), and the third ends with the cells' notes (``headline``).

    Args:
        rows_at_target: side a's and side b's mart rows (``COMPARISON_SCHEMA``) at one target.
    Returns:
        The three sentences, as the page shows them."""
    a, b = rows_at_target
    band = f"{a['band_display_min']}–{a['band_display_max']} tok/s/user"
    target = f"{a['target_intvty']:g} tok/s/user"
    return [
        f"At {target}, {a['band_phrase']} of the {band} band where both sides have runs:",
        f"{a['side_label']} delivers {a['tput_per_gpu']:,.1f} tok/s/GPU at ${a['cost_per_mtok_hyperscaler']:.3f} per "
        f"million tokens{_not_measured(a)}; {b['side_label']} delivers {b['tput_per_gpu']:,.1f} tok/s/GPU at "
        f"${b['cost_per_mtok_hyperscaler']:.3f}{_not_measured(b)}.",
        f"{headline(a)}.",
    ]


def target_sentence(row: Mapping[str, Any]) -> str:
    """One target's line under the page's table: "At 55 tok/s/user (around the middle): <cost>; <throughput>."
    (``headline`` of a mart row: the cost and tok/s/GPU sentences with the cells' notes once at the end)."""
    return f"At {row['target_intvty']:g} tok/s/user ({row['band_phrase']}): {headline(row)}."


def _not_measured(row: Mapping[str, Any]) -> str:
    """The second sentence's mark of a side by its ``cell_basis``: clamped "(not measured at this target)",
    interpolated_gap "(interpolated across a gap)", else nothing."""
    return {"clamped": " (not measured at this target)",
            "interpolated_gap": " (interpolated across a gap)"}.get(row["cell_basis"], "")


def build_report(comparisons: Sequence[Mapping[str, Any]], frontiers: Sequence[Mapping[str, Any]],
                 runs: Sequence[Mapping[str, Any]], out_dir: Path,
                 default_book: str = REPORT_PRICE_BOOK, regressions: Sequence[Mapping[str, Any]] = (),
                 explorer: Mapping[str, Any] | None = None) -> list[Path]:
    """Write the interactive report: ``index.html`` (summary, headline comparisons first, filters) and one
    self-contained page per comparison with every price book (named by ``page_names``), plus ``assets/`` (the page
    scripts and the vendored Chart.js), and remove every other page of ``out_dir`` (a comparison gone, or a page
    name of an earlier version). Pages open from disk: no server, no network.

    Args:
        comparisons: ``comparisons`` mart rows, every price book.
        frontiers: ``frontiers`` mart rows, every price book.
        runs: ``run_metrics`` rows of one price book (side keys with ``benchmark_type``, ``x_intvty``,
            ``tput_per_gpu``; optional ``source_file``, ``run_date``, ``conc``, ``tp``, ``ep``, ``num_gpus``,
            ``length_off_nominal``) for the chart's raw runs and their hover text.
        out_dir: the report folder (``<marts>/report``).
        default_book: the price book a page opens with (the first book in name order when it has no rows).
        regressions: ``regressions`` mart rows to list on the index (``regressions_section``).
        explorer: ``explorer.explorer_data``'s dict: written as ``explorer.html`` (``explorer.write_explorer``)
            and linked from the index; None writes no explorer.
    Returns:
        Paths of the pages written, index first (the explorer last, when written).
    Raises:
        ValueError: two comparisons would share a page name (``page_names``); nothing is written.
    """
    by_comparison: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in comparisons:
        by_comparison[row["comparison_id"]].append(row)
    named = page_names(by_comparison)  # before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out_dir / "img", ignore_errors=True)  # PNG charts of earlier versions of the report
    assets = out_dir / "assets"
    assets.mkdir(exist_ok=True)
    for source in (VENDOR_DIR / CHART_JS, *(STATIC_DIR / name for name in STATIC_SCRIPTS)):
        shutil.copyfile(source, assets / source.name)
    points: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in frontiers:
        points[(row["price_book"], row["side_id"])].append(row)
    books = sorted({r["price_book"] for r in comparisons})
    book = default_book if default_book in books else (books[0] if books else default_book)
    index, dates = index_runs(runs), {r.get("source_file"): r.get("run_date") for r in runs}
    # a side is on the pages of every comparison holding it: its runs are drawn, and written as JSON, once
    drawn: dict[Any, Any] = {}
    encoded: dict[int, str] = {}  # id of a side's run list (kept alive by drawn) -> its JSON text
    pages, entries = [], []
    for comparison_id, rows in sorted(by_comparison.items()):
        name = named[comparison_id]
        data = page_data(rows, points, runs, book, f"{name}.csv", index, dates, drawn)
        for side_runs in data["runs"].values():
            if id(side_runs) not in encoded:
                encoded[id(side_runs)] = json_text(side_runs)
        runs_text = "{" + ",".join(f"{json_text(k)}:{encoded[id(v)]}" for k, v in data["runs"].items()) + "}"
        shown = sorted((r for r in rows if r["price_book"] == book), key=lambda r: (r["target_index"], r["side"]))
        page = out_dir / f"{name}.html"
        page.write_text(_comparison_page(shown, data, {"runs": runs_text}), encoding="utf-8")
        pages.append(page)
        entries.append((name, shown))
    if explorer is not None:
        from pipeline.comparisons.explorer import write_explorer

        pages.append(write_explorer(explorer, out_dir))
    index = out_dir / "index.html"
    index.write_text(_index_page(entries, books, book, regressions, explorer is not None), encoding="utf-8")
    for stale in set(out_dir.glob("*.html")) - {index, *pages}:  # a page of a comparison gone, or of an old name
        stale.unlink()
    return [index, *pages]


def page_names(by_comparison: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, str]:
    """{comparison_id: page name (``slug`` of its first row)} for the comparisons of one report.

    Raises:
        ValueError: two comparisons would share a page name (one would be written over the other), naming both:
            the report is not written.
    """
    names: dict[str, str] = {}
    page_owner: dict[str, str] = {}
    for comparison_id, rows in sorted(by_comparison.items()):
        name = slug(rows[0])
        if name in page_owner:
            raise ValueError(f"comparisons {page_owner[name]!r} and {comparison_id!r} would share the page "
                             f"{name}.html: report not written")
        names[comparison_id], page_owner[name] = name, comparison_id
    return names


def json_text(data: Any) -> str:
    """``data`` as the compact JSON the pages embed (no spaces, UTF-8 text as is); NaN and infinities are refused
    (``ValueError``), as JSON has none."""
    return json.dumps(data, allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def json_script(element_id: str, data: Any, encoded: Mapping[str, str] | None = None) -> str:
    """``data`` as a ``<script type="application/json">`` element: JSON (``json_text``) with ``<``, ``>`` and ``&``
    written as ``\\u003c``/``\\u003e``/``\\u0026``, so no value (a label holding ``</script>``) can end the element
    or open a comment; NaN and infinities are refused (``ValueError``), as JSON has none.

    ``encoded``: for some top-level keys of the dict ``data``, their value's ``json_text`` already written (a value
    many pages share is encoded once); the text is the same as without it, since compact JSON writes an object
    as ``{`` + ``"key":value`` joined by ``,`` + ``}``."""
    if encoded:
        text = "{" + ",".join(f"{json_text(k)}:{encoded[k] if k in encoded else json_text(v)}"
                              for k, v in data.items()) + "}"
    else:
        text = json_text(data)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{html_text(element_id)}">{text}</script>'


def page_data(rows: Sequence[Mapping[str, Any]], points: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]],
              runs: Sequence[Mapping[str, Any]], default_book: str, csv_name: str,
              index: Mapping[tuple, Sequence[Mapping[str, Any]]] | None = None,
              dates: Mapping[Any, Any] | None = None, drawn: dict[Any, Any] | None = None) -> dict[str, Any]:
    """What one comparison page's script reads: per price book and side the frontier (``x`` tok/s/user and every
    metric splined for that side, in point order, plus ``price_per_mtok`` = hyperscaler cost × tok/s/GPU at the
    first point, the implied-cost numerator of ``compare._evaluate``), the default targets, the labels, the raw
    runs of each side ({x, y, file, date, config}) and the CSV's columns (the ``comparisons`` mart's).

    Args:
        rows: the comparison's mart rows, every price book.
        points: frontier rows by (price_book, side_id).
        runs: ``run_metrics`` rows (see ``build_report``).
        default_book: the book the page opens with.
        csv_name: the download's file name.
        index: ``index_runs(runs)``, built once for every page (default: built here).
        dates: run date by ``source_file`` over ``runs``, built once for every page (default: built here).
        drawn: the runs of sides and the chart points of runs drawn on earlier pages (``_side_runs``), shared by
            every page of one report (default: none kept).
    Returns:
        A JSON-ready dict (floats as the marts hold them: JSON keeps every bit).
    """
    first = {r["side"]: r for r in rows if r["target_index"] == 1}
    dates = {r.get("source_file"): r.get("run_date") for r in runs} if dates is None else dates
    index = index_runs(runs) if index is None else index
    books: dict[str, Any] = {}
    for book in sorted({r["price_book"] for r in rows}):
        at = {r["side"]: r for r in rows if r["price_book"] == book and r["target_index"] == 1}
        sides = {}
        for key in ("a", "b"):
            sides[key] = frontier_data(sorted(points[(book, at[key]["side_id"])], key=lambda p: p["point_index"]),
                                       dates)
        books[book] = {"version": at["a"]["price_book_version"], "sides": sides}
    default = sorted({r["target_index"]: r["target_intvty"] for r in rows if r["price_book"] == default_book}.items())
    agentic = first["a"].get("benchmark_type") == AGENTIC_TRACES
    return {
        "comparison_id": rows[0]["comparison_id"], "default_book": default_book,
        "default_targets": [t for _, t in default], "labels": {k: first[k]["side_label"] for k in ("a", "b")},
        "sides": {k: {c: first[k][c] for c in SIDE_COLUMNS} for k in ("a", "b")},
        "metrics": list(SPLINED_METRICS + OPTIONAL_METRICS), "sparse_ratio": SPARSE_RATIO, "books": books,
        "has_measured": any("measured_tok_s_per_mw" in s["metrics"] for b in books.values()
                            for s in b["sides"].values()),
        "runs": {k: _side_runs(first[k], runs, index, drawn) for k in ("a", "b")}, "colors": list(SIDE_COLORS),
        "x_label": x_axis_label(first["a"].get("x_intvty_stat"), agentic),
        "csv_columns": list(CSV_COLUMNS), "csv_name": csv_name,
        "band_display": [first["a"]["band_display_min"], first["a"]["band_display_max"]], "tie_ratio": TIE_RATIO,
        "gap_ratio": GAP_RATIO, "repeat_spread_limit": REPEAT_SPREAD_LIMIT,
    }


def frontier_data(pts: Sequence[Mapping[str, Any]], dates: Mapping[Any, Any]) -> dict[str, Any]:
    """One side's frontier in one price book as the pages' script (``static/frontier-rules.js``) reads it.

    Args:
        pts: the side's ``frontiers`` rows (``FRONTIER_SCHEMA``) of one price book, in point order, at least one.
        dates: run date by ``source_file`` (hover text).
    Returns:
        ``x`` (tok/s/user, the frontier's ``x_intvty``), ``metrics`` ({metric: values}, every splined or optional
        metric all points have as finite numbers), ``price_per_mtok`` and ``prices_per_mtok`` (per tier: $/GPU-h /
        0.0036, ``confidence.price_per_mtok``), ``ci`` (the 95 % interval columns every point has,
        ``whole_interval_columns``), ``repeat_spread`` (per point, or null) and ``points`` ({file, config, date}).
    """
    metrics = {m: [float(p[m]) for p in pts] for m in SPLINED_METRICS + OPTIONAL_METRICS
               if all(p[m] is not None and math.isfinite(p[m]) for p in pts)}
    return {
        "x": [float(p["x_intvty"]) for p in pts], "metrics": metrics,
        "price_per_mtok": price_per_mtok(pts),
        # the intervals the points have (every point, else none: never bridged), splined like a metric
        "ci": {c: [float(p[c]) for p in pts] for c in whole_interval_columns(pts)},
        "prices_per_mtok": {t: price_per_mtok(pts, t) for t in PRICE_TIERS},
        "repeat_spread": [p.get("repeat_spread") for p in pts],
        "points": [{"file": p["source_file"], "config": _point_config(p),
                    "date": _date(dates.get(p["source_file"]))} for p in pts],
    }


# The CSV download's columns: the comparisons mart's, without the band and sentence columns (the page's table
# is per target and side; the sentences are said at the default targets only).
SIDE_COLUMNS = ("kind", "title", "model", "isl", "osl", "side_label", "side_id", "hw", "precision", "spec_decoding",
                "framework", "benchmark_type")
CSV_COLUMNS = ("comparison_id", "price_book", "price_book_version", "kind", "title", "model", "isl", "osl", "side",
               "side_label", "side_id", "hw", "precision", "spec_decoding", "framework", "benchmark_type",
               "target_index", "target_intvty", "evaluated_intvty", "target_clamped", "bracket_lo_intvty",
               "bracket_hi_intvty", "bracket_ratio", "bracket_lo_repeat_spread", "bracket_hi_repeat_spread",
               *SPLINED_METRICS, *OPTIONAL_METRICS, "implied_cost_per_mtok_hyperscaler",
               "sparse_frontier", "cell_basis", "cell_note", *COMPARISON_CI_COLUMNS, "difference_significant")


def _point_config(row: Mapping[str, Any]) -> str:
    """A frontier point's or run's configuration as hover text: hardware, precision, framework, spec decoding,
    concurrency, parallelism and GPU count where known."""
    parts = [str(row.get(k)) for k in ("hw", "precision") if row.get(k) is not None]
    framework = row.get("point_framework") or row.get("framework")
    spec = row.get("point_spec_decoding") or row.get("spec_decoding")
    parts += [str(v) for v in (framework,) if v is not None]
    if spec is not None:
        parts.append(f"spec {spec}")
    conc = row.get("conc", row.get("concurrency"))
    for label, value in (("conc", conc), ("tp", row.get("tp")), ("ep", row.get("ep")), ("GPUs", row.get("num_gpus"))):
        if value is not None:
            parts.append(f"{label} {value:g}" if isinstance(value, float) else f"{label} {value}")
    return " · ".join(parts)


def index_runs(runs: Sequence[Mapping[str, Any]]) -> dict[tuple, list[Mapping[str, Any]]]:
    """``runs`` grouped by the keys every side fixes (``sides.run_fixed_key``), each group in input order: a page then looks
    at its sides' runs only instead of every run (every page scanning every run grows as pages × runs)."""
    index: dict[tuple, list[Mapping[str, Any]]] = defaultdict(list)
    for r in runs:
        index[run_fixed_key(r)].append(r)
    return index


def _side_runs(row: Mapping[str, Any], runs: Sequence[Mapping[str, Any]],
               index: Mapping[tuple, Sequence[Mapping[str, Any]]] | None = None,
               drawn: dict[Any, Any] | None = None) -> list[dict[str, Any]]:
    """The raw runs of a comparison side as chart points: x (``x_intvty``), y (``tput_per_gpu``), file, date,
    configuration (runs left off the frontiers for off-nominal lengths say so). ``index`` (``index_runs(runs)``)
    narrows the search to the side's fixed keys; ``drawn`` keeps each side's list (by its keys and x statistic)
    and each run's point (by ``id`` of its row), so a side or a run on many pages is drawn once (the caller keeps
    the rows alive while it holds ``drawn``, and must not change a list or a point); the result is the same."""
    side = Side(row["model"], row["isl"], row["osl"], row["hw"], row["precision"], row["spec_decoding"],
                row["framework"], row["benchmark_type"])
    stat = row.get("x_intvty_stat")
    if drawn is not None and ("side", side, stat) in drawn:
        return drawn[("side", side, stat)]
    belongs = side.matches
    if index is not None:
        runs, belongs = index.get(side.fixed_key, ()), side.matches_pooled_keys  # the group holds the fixed key
    out = []
    for r in runs:
        if not belongs(r) or r["x_intvty"] is None or r["tput_per_gpu"] is None:
            continue
        if stat and r.get("x_intvty_stat") and r["x_intvty_stat"] != stat:
            continue  # a run whose x_intvty is another statistic than the frontier's is not drawn on its axis
        point = None if drawn is None else drawn.get(("run", id(r)))
        if point is None:
            config = _point_config(r) + (" · left off the frontier (lengths off nominal)"
                                         if r.get("length_off_nominal") else "")
            point = {"x": float(r["x_intvty"]), "y": float(r["tput_per_gpu"]), "file": r.get("source_file"),
                     "date": _date(r.get("run_date")), "config": config}
            if drawn is not None:
                drawn[("run", id(r))] = point
        out.append(point)
    if drawn is not None:
        drawn[("side", side, stat)] = out
    return out


def _date(value: object) -> str:
    """A run date as hover text: ISO ``YYYY-MM-DD``, or ``undated``."""
    return "undated" if value is None else str(value)


def frontier_png(rows: Sequence[Mapping[str, Any]], frontiers: Sequence[Mapping[str, Any]],
                 runs: Sequence[Mapping[str, Any]], path: Path, dpi: int = 100) -> Path:
    """A comparison's chart as a PNG (matplotlib, ``plots.frontier_chart``), for the Dagster UI's metadata: every
    run of both sides, the frontier curves and the targets.

    Args:
        rows: the comparison's mart rows of one price book.
        frontiers: frontier rows of that book (any sides; this comparison's are picked by ``side_id``).
        runs: ``run_metrics`` rows as for ``build_report``.
        path: where to write the PNG (9.6 × 5.4 inches: 960×540 pixels at the default ``dpi``).
        dpi: pixels per inch.
    Returns:
        ``path``.
    """
    rows = sorted(rows, key=lambda r: (r["target_index"], r["side"]))
    sides = []
    for r in rows[:2]:
        pts = sorted((p for p in frontiers if p["side_id"] == r["side_id"]), key=lambda p: p["point_index"])
        sides.append({"label": r["side_label"], "runs": [(p["x"], p["y"]) for p in _side_runs(r, runs)],
                      "frontier": [(p["x_intvty"], p["tput_per_gpu"]) for p in pts]})
    agentic = rows[0].get("benchmark_type") == AGENTIC_TRACES
    return frontier_chart(page_title(rows[0]), sides, sorted({r["target_intvty"] for r in rows}), path,
                          x_label=x_axis_label(rows[0].get("x_intvty_stat"), agentic), dpi=dpi)


def headline_comparison_ids(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The headline comparisons of one price book's mart rows, as ``comparison_id``s in ``KIND_ORDER``: per kind
    the one the report's index leads with (``headline_comparisons``: most runs, both middle-target cells measured)."""
    by_id: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_id[row["comparison_id"]].append(row)
    return headline_comparisons(sorted(by_id.items()))


def index_order(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``comparison_id``s of one price book's mart rows in the report index's order: the headline comparisons
    (``headline_comparison_ids``, in ``KIND_ORDER``) first, then the rest by kind (``KIND_ORDER``) and id."""
    kinds = {r["comparison_id"]: r["kind"] for r in rows}
    headlines = headline_comparison_ids(rows)
    rank = {comparison_id: i for i, comparison_id in enumerate(headlines)}
    return sorted(kinds, key=lambda c: (c not in rank, rank.get(c, 0), KIND_ORDER.index(kinds[c]), c))


def charts_markdown(rows: Sequence[Mapping[str, Any]], frontiers: Sequence[Mapping[str, Any]],
                    runs: Sequence[Mapping[str, Any]], comparison_ids: Sequence[str], tmp_dir: Path,
                    dpi: int = 72) -> str:
    """Markdown for the Dagster UI: per comparison in ``comparison_ids`` (that order), a heading with its full page
    title ("MI355X FP4: MTP vs Off Speculative Decoding"), a line with model, workload, band and the sentences at the
    middle target, and its frontier chart (``frontier_png``) as an inline PNG (``data:image/png;base64``).

    Args:
        rows: ``comparisons`` mart rows of one price book (every comparison of the list among them).
        frontiers: ``frontiers`` rows of that price book.
        runs: ``run_metrics`` rows as for ``build_report`` (the charts' raw runs).
        comparison_ids: which comparisons, in the order shown.
        tmp_dir: where the PNGs are drawn (they are read back and embedded; the caller removes the folder).
        dpi: chart resolution, 72 → 691×389 pixels.
    Returns:
        The Markdown ("" for no comparison). Every text from the runs (title, model, labels) passes
        ``markdown_text``; the image's alt text is the same escaped title.
    Raises:
        KeyError: an id that has no row in ``rows``.
    """
    import base64

    parts = []
    for comparison_id, mine in _comparison_rows(rows, comparison_ids):
        png = frontier_png(mine, frontiers, runs, tmp_dir / f"{slug(mine[0])}.png", dpi=dpi)
        encoded = base64.b64encode(png.read_bytes()).decode()
        parts.append(f"{_comparison_heading(mine)}\n"
                     f"![{markdown_text(page_title(mine[0]))}](data:image/png;base64,{encoded})\n")
    return "\n".join(parts)


def headlines_markdown(rows: Sequence[Mapping[str, Any]], comparison_ids: Sequence[str]) -> str:
    """``charts_markdown`` without the charts: per comparison in ``comparison_ids`` its heading (full page title)
    and the line with model, workload, band and the sentences at the middle target. For the comparisons asset,
    whose charts the report asset draws (``frontier_charts``, the headline comparisons first).

    Raises:
        KeyError: an id that has no row in ``rows``.
    """
    return "\n".join(_comparison_heading(mine) for _, mine in _comparison_rows(rows, comparison_ids))


def _comparison_rows(rows: Sequence[Mapping[str, Any]], comparison_ids: Sequence[str]):
    """(id, that comparison's rows by target then side) for each of ``comparison_ids``; KeyError for an id
    with no row."""
    by_id: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_id[row["comparison_id"]].append(row)
    for comparison_id in comparison_ids:
        mine = sorted(by_id.get(comparison_id, []), key=lambda r: (r["target_index"], r["side"]))
        if not mine:
            raise KeyError(comparison_id)
        yield comparison_id, mine


def _comparison_heading(mine: Sequence[Mapping[str, Any]]) -> str:
    """A comparison's Markdown heading and summary line (every text from the runs through ``markdown_text``)."""
    first = mine[0]
    targets = sorted({r["target_index"] for r in mine})
    middle = next(r for r in mine if r["target_index"] == targets[len(targets) // 2])
    return (f"### {markdown_text(page_title(first))}\n\n{markdown_text(first['model'])} · "
            f"{markdown_text(workload(first))} · band {first['band_display_min']}–{first['band_display_max']} "
            f"tok/s/user · at {middle['target_intvty']:g} tok/s/user: {markdown_text(headline(middle))}\n")


_METRIC_ROWS = (("Throughput (tok/s/GPU)", "tput_per_gpu", "{:,.1f}"),
                ("Cost ($/M tokens, hyperscaler)", "cost_per_mtok_hyperscaler", "${:.3f}"),
                ("tok/s/MW (all-in power)", "tok_s_per_mw", "{:,.0f}"),
                ("tok/s/MW (measured telemetry)", "measured_tok_s_per_mw", "{:,.0f}"),
                ("Concurrency", "concurrency", "{:,.1f}"))


# the interval columns a table row shows beside its value ("1,721.3 [1,690.2–1,752.4]"), where they exist
_INTERVALS = {"tput_per_gpu": ("tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi"),
              "cost_per_mtok_hyperscaler": ("cost_per_mtok_hyperscaler_ci_lo", "cost_per_mtok_hyperscaler_ci_hi")}


def _interval(row: Mapping[str, Any], column: str) -> tuple[float | None, float | None]:
    """A mart row's 95 % interval of ``column`` (``_INTERVALS``), (None, None) where it has none."""
    ends = _INTERVALS.get(column)
    return (None, None) if ends is None else (row.get(ends[0]), row.get(ends[1]))


def _cell(value: float | None, fmt: str, interval: tuple[float | None, float | None] = (None, None)) -> str:
    """A table cell's text: the value in ``fmt``, "—" when null, followed by " [lo–hi]" (same format) when the
    95 % interval's both ends are given."""
    if value is None:
        return "—"
    lo, hi = interval
    return fmt.format(value) + ("" if lo is None or hi is None else f" [{fmt.format(lo)}–{fmt.format(hi)}]")


def _comparison_page(rows: Sequence[Mapping[str, Any]], data: Mapping[str, Any],
                     encoded: Mapping[str, str] | None = None) -> str:
    """One comparison's page: the default book's table, its three sentences (middle target) and one sentence line
    per target as written by Python (the script redraws them from ``data`` with the same rules, for the targets
    and price book the reader picks), the controls, the chart's canvas. ``encoded``: ``json_script``'s."""
    first = rows[0]
    targets = sorted({r["target_index"] for r in rows})
    at = {(r["target_index"], r["side"]): r for r in rows}
    middle = targets[len(targets) // 2]
    headline = "".join(f"<p id='sentence-{i}'>{html_text(s)}</p>"
                       for i, s in enumerate(sentences([at[(middle, "a")], at[(middle, "b")]]), start=1))
    per_target = "".join(f"<li data-target-index='{t}'>{html_text(target_sentence(at[(t, 'a')]))}</li>"
                         for t in targets)
    head = "".join(f"<th>{html_text(format(at[(t, 'a')]['target_intvty'], 'g'))} tok/s/user · "
                   f"{html_text(at[(t, s)]['side_label'])}</th>"
                   for t in targets for s in ("a", "b"))
    metrics = [m for m in _METRIC_ROWS if m[1] != "measured_tok_s_per_mw" or data["has_measured"]]
    body_rows = "".join(
        f"<tr data-metric='{col}'><td>{html_text(label)}</td>"
        + "".join(f"<td{' class=noted' if at[(t, s)]['cell_note'] else ''}>"
                  f"{html_text(_cell(at[(t, s)][col], fmt, _interval(at[(t, s)], col)))}"
                  "</td>" for t in targets for s in ("a", "b"))
        + "</tr>" for label, col, fmt in metrics)
    noted = [r for r in rows if r["cell_note"]]
    notes = ("Not measured at the target: "
             + "; ".join(f"at {r['target_intvty']:g} tok/s/user, {r['cell_note']}" for r in noted) + ".") if noted else ""
    excluded_rows = [r for r in rows[:2] if r["excluded_runs"]]
    excluded = ""
    if excluded_rows:
        excluded = ("<p class='sub'>Left off the frontiers ("
                    + ("runs with only the stand-in mean OSL / p90 E2EL, on a side drawn on 1 / p90(E2EL/OSL)"
                       if first.get("benchmark_type") == AGENTIC_TRACES else
                       "lengths not shown to be the nominal ISL/OSL, or placed by another x-axis statistic") + "): "
                    + html_text(", ".join(f"{r['side_label']} {r['excluded_runs']} run(s)" for r in excluded_rows))
                    + ".</p>")
    caveat = ""
    if first["kind"] == "spec_decoding" or first["cross_engine"]:
        flagged = " This comparison pools spec-decoding points from several engines." if first["cross_engine"] else ""
        caveat = f"<p class='caveat'>{html_text(CAVEAT + flagged)}</p>"
    inputs = "".join(f"<label>Target {i} <input id='target-{i}' type='number' min='0' step='any' "
                     f"value='{html_text(format(at[(t, 'a')]['target_intvty'], 'g'))}'> tok/s/user</label>"
                     for i, t in enumerate(targets, start=1))
    body = (
        f"<p><a href='index.html'>← all comparisons</a></p><h1>{html_text(page_title(first))}</h1>"
        f"<p class='sub'>{html_text(first['model'])} · {html_text(workload(first))} · "
        f"band {html_text(first['band_display_min'])}–{html_text(first['band_display_max'])} tok/s/user · price book "
        f"{html_text(first['price_book'])} ({html_text(first['price_book_version'])}) by default</p>"
        f"<div class='headline'>{headline}<p id='headline-scope' class='scope' hidden>These sentences are "
        f"recomputed at your targets (the middle one above, each one below the table) and price book <span "
        f"id='scope-book'>{html_text(first['price_book'])}</span>, at hyperscaler cost, by the pipeline's rule; the "
        f"comparisons mart holds them at the default targets.</p></div>"
        f"<div id='controls' class='controls'>{inputs}"
        "<button type='button' id='reset-targets'>Default targets</button>"
        "<label>Price book <select id='price-book'></select></label>"
        "<label>Cost tier <select id='cost-tier'></select></label>"
        "<button type='button' id='download-csv'>Download CSV</button></div>"
        f"<table id='comparison-table'><thead><tr><th>Metric</th>{head}</tr></thead><tbody>{body_rows}</tbody></table>"
        f"<p id='cell-notes' class='notes'{'' if noted else ' hidden'}>{html_text(notes)}</p>"
        f"<ul id='target-sentences' class='sentences'>{per_target}</ul>"
        "<p class='hint'>Values between measured frontier points are read off a monotone cubic spline; a target "
        "outside a side's measured range is clamped to the nearest end of its frontier and said so above, never "
        "extrapolated.</p>"
        f"{excluded}<div class='chart'><canvas id='frontier-chart' role='img' "
        "aria-label='frontier chart: throughput vs interactivity, every run and both frontiers'></canvas></div>"
        f"{caveat}{json_script('page-data', data, encoded)}"
        f"<script src='assets/{CHART_JS}'></script><script src='assets/{RULES_JS}'></script>"
        "<script src='assets/comparison.js'></script>"
    )
    return _document(page_title(first), body)


def headline_comparisons(entries: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> list[str]:
    """The index's headline comparisons, one per kind (``KIND_ORDER``): the comparison with the most runs on its
    two sides among those whose cells at the middle target are both read inside the measured range (no
    ``cell_note``); a kind with no such comparison has no headline. Returns their slugs."""
    best: dict[str, tuple[int, str]] = {}
    for name, rows in entries:
        targets = sorted({r["target_index"] for r in rows})
        middle = [r for r in rows if r["target_index"] == targets[len(targets) // 2]]
        if any(r["cell_note"] for r in middle):
            continue
        runs = sum(r["side_runs"] for r in middle)
        kind = rows[0]["kind"]
        if kind not in best or runs > best[kind][0]:
            best[kind] = (runs, name)
    return [best[k][1] for k in KIND_ORDER if k in best]


def _index_page(entries: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], books: Sequence[str],
                default_book: str, regressions: Sequence[Mapping[str, Any]] = (), explorer: bool = False) -> str:
    """The index: counts per kind, the headline comparisons (with their sentence at the middle target) first, then
    every comparison by kind; filters by model, GPU, precision and kind (``assets/index.js``); a link to the
    explorer page when ``explorer``."""
    counts = defaultdict(int)
    for _, rows in entries:
        counts[rows[0]["kind"]] += 1
    headlines = headline_comparisons(entries)
    rank = {name: i for i, name in enumerate(headlines)}
    ordered = sorted(entries, key=lambda e: (e[0] not in rank, rank.get(e[0], 0), KIND_ORDER.index(e[1][0]["kind"]),
                                             e[1][0]["comparison_id"]))
    items = []
    for name, rows in ordered:
        first = rows[0]
        by_side = {r["side"]: r for r in rows if r["target_index"] == 1}
        attrs = {"data-kind": KIND_SUFFIX[first["kind"]], "data-model": first["model"],
                 "data-hw-a": by_side["a"]["hw"], "data-hw-b": by_side["b"]["hw"],
                 "data-precision-a": by_side["a"]["precision"], "data-precision-b": by_side["b"]["precision"]}
        attr_text = "".join(f' {k}="{html_text(v)}"' for k, v in attrs.items())
        extra = ""
        if name in rank:
            targets = sorted({r["target_index"] for r in rows})
            row = next(r for r in rows if r["target_index"] == targets[len(targets) // 2])
            extra = (f"<br><span class='headline-tag'>headline</span> {html_text(headline(row))} "
                     f"(at {html_text(format(row['target_intvty'], 'g'))} tok/s/user)")
        items.append(f"<li{attr_text}{' class=headline' if name in rank else ''}><span class='kind'>"
                     f"{html_text(KIND_SUFFIX[first['kind']])}</span> <a href=\"{html_text(name)}.html\">"
                     f"{html_text(page_title(first))}</a> — {html_text(first['model'])} "
                     f"{html_text(_lengths(first))}{extra}</li>")
    summary = "".join(f"<tr><td>{html_text(KIND_SUFFIX[k])}</td><td>{counts[k]}</td></tr>"
                      for k in KIND_ORDER if counts[k])
    filters = "".join(f"<label>{label} <select id='filter-{key}'><option value=''>all</option></select></label>"
                      for label, key in (("Model", "model"), ("GPU", "hw"), ("Precision", "precision"),
                                         ("Kind", "kind")))
    book_text = ", ".join(books) or "—"
    body = (f"<h1>inference-frontier comparisons</h1><p class='sub'>{len(entries)} comparisons · price books "
            f"{html_text(book_text)} (pages open with {html_text(default_book)})</p>")
    if explorer:
        body += ("<p id='explorer-link'><a href='explorer.html'>Explorer</a>: overlay any sides' frontiers, compare "
                 "any two, trends over run dates</p>")
    body += regressions_section(regressions)
    if entries:
        body += (f"<table id='summary'><thead><tr><th>Kind</th><th>Comparisons</th></tr></thead><tbody>{summary}"
                 f"<tr><td>All</td><td>{len(entries)}</td></tr></tbody></table>"
                 f"<div id='filters' class='controls'>{filters}</div>"
                 f"<p id='filter-count' class='sub'>{len(entries)} of {len(entries)} comparisons shown</p>"
                 f"<ul id='comparison-list'>{''.join(items)}</ul><script src='assets/index.js'></script>")
    else:
        body += "<p>No comparison has runs on both sides.</p>"
    return _document("inference-frontier comparisons", body)


def regressions_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """The index's regressions section (``<section id='regressions'>``): one table row per ``regressions`` mart
    row given (the report passes those not recovered), regressions first: direction, status, series, metric,
    before → after with the change in %, first bad date, and the first bad run (a link where it is a URL).
    Empty text when there are none. Every value passes ``html_text``."""
    from pipeline.comparisons.regressions import METRIC_LABELS, change_text, series_label

    if not rows:
        return ""
    cells = []
    for row in sorted(rows, key=lambda r: (r["direction"] != "regression", r["status"] != "new",
                                           str(r["first_bad_date"]), r["series_id"], r["metric"])):
        run = row.get("first_bad_run") or ""
        run_cell = (f"<a href=\"{html_text(run)}\">first bad run</a>" if run.startswith(("https://", "http://"))
                    else html_text(run or "—"))
        cells.append(f"<tr class='{html_text(row['direction'])}'><td>{html_text(row['direction'])}</td>"
                     f"<td>{html_text(row['status'])}</td><td>{html_text(series_label(row))}</td>"
                     f"<td>{html_text(METRIC_LABELS.get(row['metric'], row['metric']))}</td>"
                     f"<td>{html_text(change_text(row))}</td><td>{html_text(row['first_bad_date'])}</td>"
                     f"<td>{run_cell}</td></tr>")
    n = sum(r["direction"] == "regression" for r in rows)
    return (f"<section id='regressions'><h2>Regressions ({n}) and improvements ({len(rows) - n})</h2>"
            "<p class='sub'>Changes found in each line's and frontier's history beyond its noise "
            "(comparisons/regressions; recovered ones are in the regressions mart)</p><table><thead><tr>"
            "<th>Direction</th><th>Status</th><th>Series</th><th>Metric</th><th>Before → after</th>"
            f"<th>First bad date</th><th>Run</th></tr></thead><tbody>{''.join(cells)}</tbody></table></section>")


def _document(title: str, body: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html_text(title)}</title>"
            f"<link rel='icon' href='data:,'><style>{_STYLE}</style></head><body>{body}</body></html>\n")


REQUESTS_FOLDER = "requests"


def build_request_pages(runs: Sequence[Mapping[str, Any]], requests: Sequence[Mapping[str, Any]],
                        out_dir: Path) -> list[Path]:
    """Per-request latency CDFs: one PNG per run with per-request data (``requests/<run_id>.png``, TTFT and TPOT
    empirical CDFs, ``plots.latency_cdf_chart``) and ``requests/index.html`` listing them with each run's
    configuration and SLO outcomes. The folder is rewritten whole; without per-request data it is removed.

    Args:
        runs: one row per run with per-request data: ``run_id``, ``source_file``, ``model``, ``hw``, ``precision``,
            ``spec_decoding``, ``framework``, ``conc`` and ``slo_outcomes`` (text, e.g. ``interactive: 98 % met``).
        requests: ``requests`` mart rows (``run_id``, ``ttft_s``, ``tpot_s`` in s).
        out_dir: the report folder.
    Returns:
        The index page then the PNGs written; [] when no run has per-request data.
    """
    folder = out_dir / REQUESTS_FOLDER
    shutil.rmtree(folder, ignore_errors=True)
    by_run: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in requests:
        by_run[row["run_id"]].append(row)
    shown = [run for run in runs if by_run.get(run["run_id"])]
    if not shown:
        return []
    pngs, items = [], []
    for run in shown:
        label = (f"{run['model']} {run['hw']} {run['precision']} {run['framework']} spec={run['spec_decoding']} "
                 f"conc={run['conc']}")
        rows = by_run[run["run_id"]]
        png = latency_cdf_chart(label, [r["ttft_s"] for r in rows], [r["tpot_s"] for r in rows],
                                folder / f"{run['run_id']}.png")
        pngs.append(png)
        errors = sum(r.get("error") is not None for r in rows)
        items.append(f"<section><h2>{html_text(label)}</h2><p class='sub'>{html_text(run['source_file'])}: "
                     f"{len(rows)} requests, {errors} errored. {html_text(run.get('slo_outcomes') or '')}</p>"
                     f"<img src='{html_text(png.name)}' width='640' height='240' "
                     f"alt='TTFT and TPOT CDFs of {html_text(label)}'></section>")
    index = folder / "index.html"
    index.write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Per-request latency</title>"
        "<style>body{font-family:sans-serif;max-width:60rem;margin:1rem auto}.sub{color:#555}</style></head><body>"
        "<h1>Per-request latency: TTFT and TPOT CDFs</h1><p><a href='../index.html'>All comparisons</a></p>"
        + "".join(items) + "</body></html>", encoding="utf-8")
    return [index, *pngs]
