"""The static comparison report: ``<out_dir>/report/index.html`` and one page per comparison, read like the
InferenceX seed pages ("MI355X FP4: MTP vs Off Speculative Decoding"): three sentences, the table Throughput /
Cost / tok/s/MW / Concurrency at the three targets, the frontier chart, and the cross-engine caveat.

Labels, titles and model names come from user-supplied run metadata, so every value written into the HTML passes
``html_text`` and every value written into the UI's Markdown passes ``markdown_text``, at the point of output.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from pipeline.comparisons.compare import headline
from pipeline.comparisons.plots import frontier_chart
from pipeline.frontiers.sides import Side
from pipeline.ingest.schema import AGENTIC_TRACES
from pipeline.io.storage import markdown_text
from pipeline.metrics.reference import DEFAULT_PRICE_BOOK

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
padding:.6rem 1rem}.headline p{margin:.3rem 0}img{max-width:100%;border:1px solid #dee2e6}a{color:#1c7ed6}
"""


# The price book the report pages and the UI's comparison tables show (every book is in the marts).
REPORT_PRICE_BOOK = DEFAULT_PRICE_BOOK
MAX_TABLES_IN_UI = 60
# Slugs longer than this are cut and given a hash of the whole slug, so a file name stays well under the 255-byte
# limit of common file systems however long a model or framework name is.
MAX_SLUG = 120


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
    """How a cell was read off its frontier, for the UI tables: "clamped" (outside the side's measured range),
    "sparse" (interpolated across a gap where cost and throughput disagree) or "measured range"."""
    return "clamped" if row["target_clamped"] else "sparse" if row["sparse_frontier"] else "measured range"


def workload(row: Mapping[str, Any]) -> str:
    """The side's workload as the pages print it: ``ISL/OSL 1024/1024``, or ``agentic traces`` (no ISL/OSL)."""
    if row.get("benchmark_type") == AGENTIC_TRACES:
        return "agentic traces"
    return f"ISL/OSL {row['isl']}/{row['osl']}"


def _lengths(row: Mapping[str, Any]) -> str:
    """``1024/1024`` (ISL/OSL) in the index and the UI summary, or ``agentic traces``."""
    return "agentic traces" if row.get("benchmark_type") == AGENTIC_TRACES else f"{row['isl']}/{row['osl']}"


def slug(row: Mapping[str, Any]) -> str:
    """A short, unique file name for a comparison: kind, title, model, ISL/OSL or ``agentic`` ([a-z0-9-] only). A
    slug longer than ``MAX_SLUG`` keeps its first characters and ends in 12 hex digits of the whole slug's sha256."""
    lengths = "agentic" if row.get("benchmark_type") == AGENTIC_TRACES else f"{row['isl']} {row['osl']}"
    text = f"{row['kind']} {row['title']} {row['model']} {lengths}"
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(name) > MAX_SLUG:
        name = f"{name[:MAX_SLUG - 13].rstrip('-')}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
    return name


def page_title(row: Mapping[str, Any]) -> str:
    """Seed-page title: the comparison title plus its kind, e.g. "MI355X FP4: MTP vs Off Speculative Decoding"."""
    return f"{row['title']} {KIND_SUFFIX[row['kind']]}"


def sentences(rows_at_target: Sequence[Mapping[str, Any]]) -> list[str]:
    """The seed page's three sentences at one target: where it sits in the band, both sides' values, and
    "N% cheaper per token; N% more tok/s/GPU" (hyperscaler cost). A side whose value is clamped or sparse is
    marked in the second sentence, and the third ends with the cells' notes (``headline``)."""
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


def _not_measured(row: Mapping[str, Any]) -> str:
    if row["target_clamped"]:
        return " (not measured at this target)"
    return " (interpolated across a gap)" if row["sparse_frontier"] else ""


def build_report(comparisons: Sequence[Mapping[str, Any]], frontiers: Sequence[Mapping[str, Any]],
                 runs: Sequence[Mapping[str, Any]], out_dir: Path) -> list[Path]:
    """Write the report for one price book's comparisons.

    Args:
        comparisons: ``comparisons`` mart rows of one price book.
        frontiers: ``frontiers`` mart rows of the same book.
        runs: ``run_metrics`` rows (``x_intvty``, ``tput_per_gpu`` and side keys with ``benchmark_type``) for the
            scatter.
        out_dir: the report folder (``<marts>/report``).
    Returns:
        Paths of the pages written, index first.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    by_comparison: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in comparisons:
        by_comparison[row["comparison_id"]].append(row)
    points: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in frontiers:
        points[row["side_id"]].append(row)
    pages = []
    index_items: dict[str, list[str]] = defaultdict(list)
    for comparison_id, rows in sorted(by_comparison.items()):
        rows = sorted(rows, key=lambda r: (r["target_index"], r["side"]))
        name = slug(rows[0])
        chart = frontier_chart(
            page_title(rows[0]),
            [{"label": r["side_label"], "runs": _side_runs(r, runs),
              "frontier": [(p["x_intvty"], p["tput_per_gpu"])
                           for p in sorted(points[r["side_id"]], key=lambda p: p["point_index"])]}
             for r in rows[:2]],
            sorted({r["target_intvty"] for r in rows}),
            out_dir / "img" / f"{name}.png",
            x_label=("E2E-normalized interactivity (tok/s/user, 1 / p90(E2EL/OSL))"
                     if rows[0].get("benchmark_type") == AGENTIC_TRACES else "Interactivity (tok/s/user, median)"),
        )
        page = out_dir / f"{name}.html"
        page.write_text(_comparison_page(rows, chart.relative_to(out_dir).as_posix()), encoding="utf-8")
        pages.append(page)
        first = rows[0]
        index_items[first["kind"]].append(
            f'<li><a href="{html_text(name)}.html">{html_text(page_title(first))}</a> — {html_text(first["model"])} '
            f'{html_text(_lengths(first))}</li>')
    index = out_dir / "index.html"
    sections = "".join(
        f"<h2>{KIND_SUFFIX[kind]}</h2><ul>{''.join(index_items[kind])}</ul>" for kind in KIND_ORDER if index_items[kind])
    book = f"{comparisons[0]['price_book']} ({comparisons[0]['price_book_version']})" if comparisons else "—"
    index.write_text(_document("inference-frontier comparisons",
                               f"<h1>inference-frontier comparisons</h1><p class='sub'>{len(by_comparison)} "
                               f"comparisons · price book {html_text(book)}</p>"
                               f"{sections or '<p>No comparison has runs on both sides.</p>'}"), encoding="utf-8")
    return [index, *pages]


def _side_runs(row: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    side = Side(row["model"], row["isl"], row["osl"], row["hw"], row["precision"], row["spec_decoding"],
                row["framework"], row["benchmark_type"])
    return [(r["x_intvty"], r["tput_per_gpu"]) for r in runs if side.matches(r)]


def _comparison_page(rows: Sequence[Mapping[str, Any]], chart: str) -> str:
    first = rows[0]
    targets = sorted({r["target_index"] for r in rows})
    at = {(r["target_index"], r["side"]): r for r in rows}
    middle = targets[len(targets) // 2]
    headline = "".join(f"<p>{html_text(s)}</p>" for s in sentences([at[(middle, "a")], at[(middle, "b")]]))
    head = "".join(f"<th>{html_text(format(at[(t, 'a')]['target_intvty'], 'g'))} tok/s/user · "
                   f"{html_text(at[(t, s)]['side_label'])}</th>"
                   for t in targets for s in ("a", "b"))
    metrics = (("Throughput (tok/s/GPU)", "tput_per_gpu", "{:,.1f}"),
               ("Cost ($/M tokens, hyperscaler)", "cost_per_mtok_hyperscaler", "${:.3f}"),
               ("tok/s/MW (all-in power)", "tok_s_per_mw", "{:,.0f}"),
               ("Concurrency", "concurrency", "{:,.1f}"))
    body_rows = "".join(
        f"<tr><td>{html_text(label)}</td>"
        + "".join(f"<td>{html_text(fmt.format(at[(t, s)][col]))}</td>" for t in targets for s in ("a", "b"))
        + "</tr>" for label, col, fmt in metrics)
    noted = [r for r in rows if r["cell_note"]]
    notes = ""
    if noted:
        notes += ("<p class='sub'>Not measured at the target: "
                  + html_text("; ".join(f"at {r['target_intvty']:g} tok/s/user, {r['cell_note']}" for r in noted))
                  + ".</p>")
    excluded = [r for r in rows[:2] if r["excluded_runs"]]
    if excluded:
        notes += ("<p class='sub'>Left off the frontiers (measured ISL/OSL more than 10 % off nominal): "
                  + html_text(", ".join(f"{r['side_label']} {r['excluded_runs']} run(s)" for r in excluded))
                  + ".</p>")
    caveat = ""
    if first["kind"] == "spec_decoding" or first["cross_engine"]:
        flagged = " This comparison pools spec-decoding points from several engines." if first["cross_engine"] else ""
        caveat = f"<p class='caveat'>{html_text(CAVEAT + flagged)}</p>"
    body = (
        f"<p><a href='index.html'>← all comparisons</a></p><h1>{html_text(page_title(first))}</h1>"
        f"<p class='sub'>{html_text(first['model'])} · {html_text(workload(first))} · "
        f"band {html_text(first['band_display_min'])}–{html_text(first['band_display_max'])} tok/s/user · price book "
        f"{html_text(first['price_book'])} ({html_text(first['price_book_version'])})</p>"
        f"<div class='headline'>{headline}</div>"
        f"<table id='comparison-table'><thead><tr><th>Metric</th>{head}</tr></thead><tbody>{body_rows}</tbody></table>"
        f"{notes}<img id='frontier-chart' src='{html_text(chart)}' alt='frontier chart: throughput vs interactivity'>"
        f"{caveat}"
    )
    return _document(page_title(first), body)


def _document(title: str, body: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html_text(title)}</title>"
            f"<link rel='icon' href='data:,'><style>{_STYLE}</style></head><body>{body}</body></html>\n")
