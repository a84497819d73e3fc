"""``python -m pipeline compare``: two sides read at the same interactivity, from the ``runs/`` mart.

Every value a user types is checked against the mart before anything is computed: an unknown model, ISL/OSL,
GPU, precision, spec-decoding method, framework or price book is answered in one line with the valid values and
the closest one (``difflib``); the aliases the ingest keys know (``nvfp4``/``mxfp4`` → ``fp4``, ``off`` → ``none``,
``trt`` → ``trtllm``, ``mi355`` → ``mi355x``) are accepted. Run counts are per run (distinct ``run_id``), never per
price book.

Exit codes: 0 printed; 1 a value or a side the mart does not have, the same side twice, or no runs mart yet;
2 a malformed command line (argparse).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from pipeline.comparisons.compare import COMPARISON_SCHEMA, GAP_RATIO, compare, headline, sentences
from pipeline.comparisons.report import workload
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import POOLED, Comparison, Side, side_label
from pipeline.ingest.keys import (
    gpu_keys,
    normalize_framework,
    normalize_hw,
    normalize_precision,
    normalize_spec,
)
from pipeline.ingest.schema import AGENTIC_TRACES, FIXED_SEQ
from pipeline.io.storage import read_mart

SIDE_KEYS = ("hw", "precision", "spec_decoding", "framework")
# What a user may type for a side key; ``spec`` is short for ``spec_decoding``.
KEY_ALIASES = {"spec": "spec_decoding", "gpu": "hw"}
NORMALIZERS: dict[str, Callable[[object], str | None]] = {
    "hw": normalize_hw, "precision": normalize_precision, "spec_decoding": normalize_spec,
    "framework": normalize_framework,
}
# --list: one row per side with runs; agentic-trace sides have no ISL/OSL (null in JSON, empty in CSV, — in the
# table) and ``benchmark_type`` tells them apart.
LIST_COLUMNS = ("model", "benchmark_type", "isl", "osl", "hw", "precision", "spec_decoding", "framework", "runs")


class UsageError(ValueError):
    """A value the mart does not have, or a request that cannot be answered; its message is the one line shown."""


def suggest(kind: str, value: object, valid: Iterable[object], context: str = "", known: bool = False) -> str:
    """One line: ``unknown <kind> '<value>'[ <context>]; valid: a, b, …[; did you mean x?]`` (the closest valid
    value by ``difflib.get_close_matches``, cutoff 0.5). ``known``: the value exists elsewhere in the mart, so the
    line starts ``no runs with <kind> '<value>'`` instead."""
    choices = [str(v) for v in valid]
    close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
    head = f"no runs with {kind} {str(value)!r}" if known else f"unknown {kind} {str(value)!r}"
    return (f"{head}{' ' + context if context else ''}; valid: {', '.join(choices) or 'none'}"
            + (f"; did you mean {close[0]}?" if close else ""))


def parse_side(text: str) -> dict[str, str]:
    """``hw=mi355x,precision=fp4[,spec_decoding=mtp][,framework=sglang]`` → {key: value}; keys lowercased, ``spec``
    and ``gpu`` accepted for ``spec_decoding`` and ``hw``.

    Raises:
        UsageError: an item without ``=``, or a key other than ``SIDE_KEYS`` (with the closest key).
    """
    side: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if "=" not in item:
            raise UsageError(f"side {text!r}: expected key=value[,key=value…], got {item!r}")
        key, value = (s.strip() for s in item.split("=", 1))
        key = KEY_ALIASES.get(key.lower(), key.lower())
        if key not in SIDE_KEYS:
            close = difflib.get_close_matches(key, (*SIDE_KEYS, *KEY_ALIASES), n=1, cutoff=0.5)
            hint = f"; did you mean {KEY_ALIASES.get(close[0], close[0])}?" if close else ""
            raise UsageError(f"unknown side key {key!r} in {text!r}; valid: {', '.join(SIDE_KEYS)}{hint}")
        side[key] = value
    return side


@dataclass(frozen=True)
class Catalog:
    """The runs of one price book (``runs/`` rows, one per run) and every price book the mart holds.

    Attributes:
        runs: the fixed-sequence runs, the ones a comparison on the command line reads.
        price_books: every price book of the mart, sorted.
        agentic_runs: the agentic-trace runs (``benchmark_type`` = ``agentic_traces``, ISL/OSL null): listed by
            ``--list``; their comparisons, on their runs' ``x_intvty_stat`` (E2E-normalized interactivity, or the
            stand-in mean OSL / p90 E2EL; never the two on one axis), are in the comparisons mart and the report.
    """

    runs: list[dict[str, Any]]
    price_books: tuple[str, ...]
    agentic_runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def listed_runs(self) -> list[dict[str, Any]]:
        """Every run of the price book, fixed-sequence and agentic-trace: what ``--list`` counts."""
        return [*self.runs, *self.agentic_runs]


def load_runs(out_dir: Path, price_book: str) -> Catalog:
    """The ``runs/`` mart's rows of ``price_book`` (one row per run): fixed-sequence runs in ``runs``, agentic-trace
    runs in ``agentic_runs``.

    Raises:
        UsageError: no runs mart under ``out_dir`` yet, or a price book the mart does not have (valid ones listed).
    """
    try:
        table = read_mart(out_dir, "runs")
    except FileNotFoundError:
        raise UsageError(f"no runs mart in {out_dir}: run `python -m pipeline run` first") from None
    books = tuple(sorted(set(table.column("price_book").to_pylist())))
    if price_book not in books:
        raise UsageError(suggest("price book", price_book, books))
    rows = [r for r in table.to_pylist() if r["price_book"] == price_book]
    fixed = [r for r in rows if (r.get("benchmark_type") or FIXED_SEQ) == FIXED_SEQ]
    return Catalog(fixed, books, [r for r in rows if (r.get("benchmark_type") or FIXED_SEQ) != FIXED_SEQ])


def side_counts(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, benchmark_type, isl, osl, hw, precision, spec_decoding, framework) with ``runs`` =
    distinct run ids (a run priced in several books counts once), sorted by those keys (a null ISL/OSL, as
    agentic-trace runs have, first). A run without ``benchmark_type`` is a fixed-sequence run."""
    ids: dict[tuple, set] = defaultdict(set)
    for r in runs:
        r = {**r, "benchmark_type": r.get("benchmark_type") or FIXED_SEQ}
        ids[tuple(r[k] for k in LIST_COLUMNS[:-1])].add(r["run_id"])
    return [dict(zip(LIST_COLUMNS, (*key, len(v)))) for key, v in sorted(ids.items(), key=lambda kv: tuple(
        "" if x is None else str(x).zfill(8) if isinstance(x, int) else x for x in kv[0]))]


def resolve_workload(runs: Sequence[Mapping[str, Any]], model: str | None, isl: int | None,
                     osl: int | None) -> tuple[str, int, int]:
    """Check ``model``, then ``isl``/``osl`` against the runs (each answered with the valid values); returns them.

    Raises:
        UsageError: a missing or unknown model, or an ISL/OSL pair the model has no runs at.
    """
    models = sorted({r["model"] for r in runs})
    if model is None:
        raise UsageError(f"--model is required; valid: {', '.join(models)} (python -m pipeline compare --list)")
    if model.lower() not in models:
        raise UsageError(suggest("model", model, models))
    if (isl is None) != (osl is None):
        raise UsageError("--isl and --osl go together")
    model = model.lower()
    pairs = sorted({(r["isl"], r["osl"]) for r in runs if r["model"] == model and r["isl"] is not None
                    and r["osl"] is not None})  # agentic-trace runs have no ISL/OSL
    shown = [f"{i}/{o}" for i, o in pairs]
    if isl is None or osl is None or (isl, osl) not in pairs:
        given = "none given" if isl is None or osl is None else f"{isl}/{osl}"
        raise UsageError(suggest("ISL/OSL", given, shown, f"for model {model}")
                         .replace("unknown ISL/OSL 'none given'", "--isl and --osl are required"))
    return model, isl, osl


def resolve_side(name: str, given: Mapping[str, str], runs: Sequence[Mapping[str, Any]], model: str, isl: int,
                 osl: int) -> Side:
    """Side ``name`` (``a`` or ``b``) from the user's ``key=value`` pairs: values pass the keys module's
    normalizers (aliases), each is checked against the values with runs at (model, isl, osl) narrowed by the keys
    before it, ``all`` pools spec_decoding/framework (the default).

    Raises:
        UsageError: hw or precision missing, or a value with no runs (valid values and a close match named).
    """
    missing = [k for k in ("hw", "precision") if k not in given]
    if missing:
        raise UsageError(f"side {name} needs hw= and precision= (and may set spec_decoding=, framework=); "
                         f"got {dict(given) or 'nothing'}")
    pool = [r for r in runs if r["model"] == model and r["isl"] == isl and r["osl"] == osl]
    keys: dict[str, str] = {}
    for key in SIDE_KEYS:
        raw = given.get(key, POOLED)
        value = POOLED if raw.strip().lower() == POOLED and key in ("spec_decoding", "framework") \
            else NORMALIZERS[key](raw) or raw
        valid = sorted({r[key] for r in pool if r[key] is not None})
        if value != POOLED and value not in valid:
            context = f"for side {name} at {model} {isl}/{osl}" + "".join(
                f" {k}={v}" for k, v in keys.items() if v != POOLED)
            raise UsageError(suggest(key, raw, valid + ([POOLED] if key in ("spec_decoding", "framework") else []),
                                     context, known=any(r[key] == value for r in runs) or (key == "hw" and value in gpu_keys())))
        if value != POOLED:
            pool = [r for r in pool if r[key] == value]
        keys[key] = value
    return Side(model, isl, osl, keys["hw"], keys["precision"], keys["spec_decoding"], keys["framework"])


def comparison_rows(catalog: Catalog, model: str | None, isl: int | None, osl: int | None,
                    a: Mapping[str, str], b: Mapping[str, str], targets: Sequence[float] | None,
                    include_off_nominal: bool = False) -> list[dict[str, Any]]:
    """``COMPARISON_SCHEMA`` rows (per target, side a then b) for the two sides, with every value checked.

    Raises:
        UsageError: any value the mart lacks, a model with agentic-trace runs only, the same side twice, a
            non-positive target, or a side whose runs are all left off its frontier.
    """
    if model is not None and model.lower() not in {r["model"] for r in catalog.runs} \
            and model.lower() in {r["model"] for r in catalog.agentic_runs}:
        raise UsageError(f"model {model.lower()!r} has {AGENTIC_TRACES} runs only (no ISL/OSL): their comparisons "
                         "are in comparisons.parquet and the report; compare reads fixed_seq sides")
    model, isl, osl = resolve_workload(catalog.runs, model, isl, osl)
    side_a = resolve_side("a", a, catalog.runs, model, isl, osl)
    side_b = resolve_side("b", b, catalog.runs, model, isl, osl)
    if side_a == side_b:
        raise UsageError(f"side a and side b are the same side ({side_a.side_id}): change at least one of "
                         f"{', '.join(SIDE_KEYS)}")
    if targets and any(t <= 0 for t in targets):
        raise UsageError(f"--targets must be positive tok/s/user, got {' '.join(f'{t:g}' for t in targets)}")
    # The kind is the first differing key in the pages' order; when more keys differ, each label names them all
    # ("B200 all" vs "MI355X SGLang"), so no title pretends the sides differ in one key only.
    kinds = {"hw": "hardware", "precision": "precision", "spec_decoding": "spec_decoding", "framework": "framework"}
    differs = [kinds[k] for k in kinds if getattr(side_a, k) != getattr(side_b, k)]
    comparison = Comparison(differs[0], side_a, side_b, *(" ".join(side_label(k, s) for k in differs)
                                                          for s in (side_a, side_b)))
    by_side = frontiers_by_side(build_frontiers(catalog.runs, [side_a, side_b],
                                                include_off_nominal=include_off_nominal).to_pylist())
    missing = [s.side_id for s in (side_a, side_b) if s.side_id not in by_side]
    if missing:
        raise UsageError(f"no frontier for side(s) {', '.join(missing)}: every run is off its nominal ISL/OSL "
                         "(--include-off-nominal keeps them)")
    rows = compare(comparison, by_side, targets=targets)
    if len(differs) > 1:  # the page titles name one differing key; say both labels whole instead
        for row in rows:
            row["title"] = f"{comparison.label_a} vs {comparison.label_b}"
    return rows


def _json_default(value: object) -> object:
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def rows_as_json(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as a JSON array of objects (mart column names, nulls as null)."""
    return json.dumps(list(rows), default=_json_default, indent=1)


# A spreadsheet runs a text cell that starts with one of these as a formula (CSV injection: a model key "=HYPERLINK(…)"
# from a sidecar). The report page's CSV download prefixes the same ones (static/comparison.js, csvField).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_text(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet shows as typed: a string starting with one of ``FORMULA_STARTS`` gets a
    leading apostrophe (``=dsr1`` → ``'=dsr1``); numbers (a negative one too), dates, None and other strings are
    returned unchanged."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def rows_as_csv(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """The rows as CSV (RFC 4180: lines end in CRLF, a cell holding ``,``, ``"``, CR or LF is quoted) with a
    header of ``columns``; nulls as empty cells, text through ``spreadsheet_text``."""
    buffer = io.StringIO()
    # "\r\n", not "\n": Python's writer quotes a cell holding CR only when CR is in the line terminator
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    writer.writerows({key: spreadsheet_text(value) for key, value in row.items()} for row in rows)
    return buffer.getvalue()


def format_list(rows: Sequence[Mapping[str, Any]], price_books: Sequence[str], price_book: str) -> str:
    """``--list`` as a terminal table: every side with runs and its run count (a null ISL/OSL, agentic-trace
    sides, as ``—``), then the price books."""
    def text(row: Mapping[str, Any], column: str) -> str:
        return "—" if row[column] is None else str(row[column])

    widths = {c: max(len(c), *(len(text(r, c)) for r in rows)) if rows else len(c) for c in LIST_COLUMNS}
    lines = ["  ".join(c.ljust(widths[c]) for c in LIST_COLUMNS)]
    lines += ["  ".join(text(r, c).rjust(widths[c]) if c in ("isl", "osl", "runs") else text(r, c).ljust(widths[c])
                        for c in LIST_COLUMNS) for r in rows]
    lines.append(f"\n{sum(r['runs'] for r in rows)} runs (counted once each; price book {price_book}); "
                 f"price books: {', '.join(price_books)}")
    lines.append("a side fixes hw and precision; spec_decoding and framework default to all (pooled)")
    if any(r["benchmark_type"] != FIXED_SEQ for r in rows):
        lines.append(f"{AGENTIC_TRACES} sides have no ISL/OSL (—): their comparisons, on E2E-normalized "
                     "interactivity or, for runs without it, on the stand-in mean OSL / p90 E2EL (x_intvty_stat), "
                     "are in comparisons.parquet and the report; compare reads fixed_seq sides")
    return "\n".join(lines)


def tier_cost_sentence(a: Mapping[str, Any], b: Mapping[str, Any], tier: str) -> str:
    """The pages' cost sentence for ``tier`` of a row pair at one target (side a's and side b's
    ``COMPARISON_SCHEMA`` rows), without the caveat: ``pipeline.comparisons.compare.sentences``, the one rule of
    every tier ("MTP is 20% cheaper per token at rental prices", "… 2.2× cheaper per token at rental prices (Off
    costs 122% more)", tied below 1 %, "within run-to-run noise" where the sides' 95 % cost intervals overlap, "no
    <tier> price for one side")."""
    return sentences(a["side_label"], b["side_label"], a, b, tier=tier)["cost_sentence"]


def tier_headline(a: Mapping[str, Any], b: Mapping[str, Any], tier: str) -> str:
    """A row pair's two sentences at ``tier`` as one line with the cells' caveat once at the end (``headline`` of
    ``sentences``); at the hyperscaler tier this is the mart's ``headline``."""
    said = sentences(a["side_label"], b["side_label"], a, b, tier=tier, caveat=b["sentence_caveat"])
    return headline({**b, **said})


def interval_line(row: Mapping[str, Any], tier: str) -> str | None:
    """A cell's 95 % intervals (repeats) as one line for the table, or None when the side has none: "95 % interval
    (repeats): 1690.2–1752.4 tok/s/GPU; $0.230–$0.243 per M tok" (the cost at ``tier``; docs/metrics.md 11)."""
    lo, hi = row.get("tput_per_gpu_ci_lo"), row.get("tput_per_gpu_ci_hi")
    if lo is None or hi is None:
        return None
    line = f"95 % interval (repeats): {lo:.1f}–{hi:.1f} tok/s/GPU"
    cost_lo, cost_hi = row.get(f"cost_per_mtok_{tier}_ci_lo"), row.get(f"cost_per_mtok_{tier}_ci_hi")
    if cost_lo is not None and cost_hi is not None:
        line += f"; ${cost_lo:.3f}–${cost_hi:.3f} per M tok"
    return line


def format_comparison(rows: list[dict], comparison_id: str, tier: str = "hyperscaler") -> str:
    """One comparison as a terminal table: per target, both sides' throughput, ``tier`` cost, tok/s/MW,
    concurrency, the measured frontier points bracketing the target; the mark follows ``cell_basis``: ``*``
    clamped to the side's frontier end, ``~`` interpolated across a gap (both explained under the cell by its
    ``cell_note``, as is a bracketing point averaging disagreeing repeats); a cell whose side has 95 % intervals
    (repeats) gets a line with them (``interval_line``); the sentences are ``sentences`` at ``tier``."""
    mine = [r for r in rows if r["comparison_id"] == comparison_id]
    first = mine[0]
    header = (f"{first['title']}  ({first['model']}, {workload(first)}; band "
              f"{first['band_display_min']}–{first['band_display_max']} tok/s/user)")
    out = [header]
    for row in mine[:2]:
        if row["excluded_runs"]:
            out.append(f"{'':>8} {row['side_label']}: {row['excluded_runs']} run(s) left off the frontier "
                       "(lengths not shown to be the nominal ISL/OSL, or placed by another x-axis statistic)")
    if tier != "hyperscaler":
        out[0] += f"; $/M tok at {tier} prices"
    w = max(10, *(len(r["side_label"]) for r in mine))
    out.append(f"{'target':>8} {'side':<{w}} {'tok/s/GPU':>10} {'$/M tok':>10} {'tok/s/MW':>11} {'conc':>7}"
               f" {'measured tok/s/MW':>18} {'measured points':>16}")
    by_target: dict[int, dict[str, dict]] = defaultdict(dict)
    for row in mine:
        by_target[row["target_index"]][row["side"]] = row
    marked = False
    for row in mine:
        measured = "—" if row["measured_tok_s_per_mw"] is None else f"{row['measured_tok_s_per_mw']:,.0f}"
        lo, hi = row["bracket_lo_intvty"], row["bracket_hi_intvty"]
        bracket = f"{'—' if lo is None else f'{lo:.1f}'}–{'—' if hi is None else f'{hi:.1f}'}"
        mark = {"clamped": "*", "interpolated_gap": "~"}.get(row["cell_basis"], " ")
        marked = marked or mark != " "
        cost = row[f"cost_per_mtok_{tier}"]
        out.append(
            f"{row['target_intvty']:>7.0f}{mark} {row['side_label']:<{w}} {row['tput_per_gpu']:>10.1f} "
            f"{'—' if cost is None else f'{cost:.3f}':>10} {row['tok_s_per_mw']:>11,.0f} {row['concurrency']:>7.1f}"
            f" {measured:>18} {bracket:>16}"
        )
        if row["cell_note"]:
            head = "not measured at the target" if mark != " " else "note"
            out.append(f"{'':>8} {head}: {row['cell_note']}")
        interval = interval_line(row, tier)
        if interval:
            out.append(f"{'':>8} {interval}")
        if row["side"] == "b" and row["target_index"] == len(by_target) and row["cross_engine"]:
            out.append(f"{'':>8} caveat: spec-decoding points come from engines whose acceptance rates are not "
                       "defined the same way (cross_engine)")
        if row["side"] == "b":
            said = tier_headline(by_target[row["target_index"]]["a"], row, tier)
            out.append(f"{'':>8} at {row['target_intvty']:.0f} tok/s/user ({row['band_phrase']}): {said}")
    if marked:
        out.append("* target outside the side's frontier: the value is the frontier end's (clamped), not measured "
                   f"at the target; ~ interpolated across a gap: the measured points around the target are more than "
                   f"{GAP_RATIO:g}× apart, or its splined cost and tok/s/GPU disagree (sparse)")
    return "\n".join(out)


def out_of_band(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per requested target outside the comparison's band (``band_min``–``band_max``), saying so."""
    if not rows:
        return []
    lo, hi = rows[0]["band_min"], rows[0]["band_max"]
    return [f"target {t:g} tok/s/user is outside the band both sides cover ({lo:.1f}–{hi:.1f}); "
            "its cells are clamped or extrapolated, see the notes"
            for t in sorted({r["target_intvty"] for r in rows}) if t < lo or t > hi]


def run_compare(args: Any, out_dir: Path) -> int:
    """The ``compare`` command (``--list`` or a comparison), printing to stdout/stderr; returns the exit code."""
    fmt = "json" if args.json else "csv" if args.csv else "table"
    try:
        catalog = load_runs(out_dir, args.price_book)
        if args.list:
            runs = [r for r in catalog.listed_runs if (args.model is None or r["model"] == args.model.lower())
                    and (args.isl is None or r["isl"] == args.isl) and (args.osl is None or r["osl"] == args.osl)]
            if not runs:
                resolve_workload(catalog.listed_runs, args.model, args.isl, args.osl)  # names what does not exist
            listed = side_counts(runs)
            print(rows_as_json(listed) if fmt == "json" else rows_as_csv(listed, LIST_COLUMNS) if fmt == "csv"
                  else format_list(listed, catalog.price_books, args.price_book))
            return 0
        if args.a is None or args.b is None:
            raise UsageError("compare needs --a and --b (or --list to see the sides with runs)")
        rows = comparison_rows(catalog, args.model, args.isl, args.osl, parse_side(args.a), parse_side(args.b),
                               args.targets, args.include_off_nominal)
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if fmt == "json":
        print(rows_as_json(rows))
    elif fmt == "csv":
        print(rows_as_csv(rows, COMPARISON_SCHEMA.names), end="")
    else:
        print(format_comparison(rows, rows[0]["comparison_id"], tier=args.tier))
        for line in out_of_band(rows):
            print(f"note: {line}", file=sys.stderr)
    return 0
