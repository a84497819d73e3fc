"""The Great Expectations (1.x) suite over validated runs: what a trustworthy run table looks like.

Each expectation has a check name, a blocking flag and the reason for that flag. Blocking expectations mean
"downstream numbers would be wrong" (a frontier built on them would publish false tok/s/GPU or $/M tokens), so
Dagster stops the metrics stage when one fails; the row rules of ``pipeline.validate.rules`` reject every row a blocking
expectation would fail on (each blocking predicate has a rule: presence → ``missing_metadata``/``missing_field``,
positivity → ``non_positive``/``no_completed_requests``, order → ``inconsistent:*`` with the same rounding
allowance, the TPOT range → ``implausible:median_tpot_ms``, the GPU set → ``unknown_hw``, the model set →
``unknown_model_size``, the type set → ``unknown_benchmark_type``), so a failure means a bug, not a bad file.
Warnings flag runs that are valid but surprising (measured lengths far from nominal, a source whose interactivity
disagrees with its own TPOT).

GX runs in an ephemeral context over a pandas DataFrame (``dagster-ge`` supports only GX < 1.0).
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.ingest.schema import AGENTIC_TRACES, BENCHMARK_TYPES, RUN_COLUMNS
from pipeline.io.storage import rows_by_rowid
from pipeline.validate.plausibility import load_plausibility
from pipeline.validate.rules import DUPLICATE_SEARCH_COLUMNS, PAIRING_COLUMNS, duplicates_in_table, pairing_rows

if TYPE_CHECKING:
    import duckdb

ROUNDING = 1e-9  # relative; the row rules' allowance on output ≤ total throughput and TTFT ≤ E2EL


@dataclass(frozen=True)
class Expectation:
    """One expectation of the suite: its Dagster check name, whether it blocks, why, and how to make the GX
    object (``make``, called on first use of ``gx``).

    The GX object is made only when asked for: importing Great Expectations is most of the cost of loading the
    code location, and the check specs (``pipeline.defs.validate.expectations``) need only the name, the
    severity and the reason; GX is imported where the suite runs (``run_suite``).
    """

    name: str
    blocking: bool
    why: str
    make: Callable[[], Any] = field(repr=False, compare=False)

    @cached_property
    def gx(self) -> Any:
        """The GX expectation object (``great_expectations.expectations.Expect…``); imports GX on first use."""
        return self.make()


def _gx() -> Any:
    """``great_expectations.expectations``, imported on first call."""
    import great_expectations as gx

    return gx.expectations


def _column(name: str) -> Any:
    """GX's row-condition column ``name`` (``great_expectations.expectations.row_conditions.Column``)."""
    from great_expectations.expectations.row_conditions import Column

    return Column(name)


@dataclass
class Outcome:
    """One expectation's result: pass/fail and GX's statistics (element and unexpected counts, examples)."""

    name: str
    blocking: bool
    success: bool
    element_count: int
    unexpected_count: int
    unexpected_percent: float
    examples: list


def build_suite(known_hw: Iterable[str], known_models: Iterable[str] | None = None) -> list[Expectation]:
    """The expectation suite ``validated_runs`` (names double as Dagster check names).

    Args:
        known_hw: the GPU reference's ``hw`` keys (``hw_in_gpu_reference``).
        known_models: the model keys with an activated-parameter count (``model_size_known``); default the keys of
            ``model_active_params.csv`` in ``PIPELINE_REFERENCE_DIR``, the file ``rules.unknown_model_size_rule``
            reads.
    Returns:
        The expectations in reporting order, blocking first; each makes its GX object on first use (no GX
        import here).
    Raises:
        PlausibilityError: ``known_models`` is None and the default plausibility reference cannot be used.
    """
    known = sorted(set(known_hw))
    plausibility = load_plausibility()
    models = sorted(set(plausibility.active_params_b if known_models is None else known_models))
    tpot = plausibility.range_of("median_tpot_s")
    blocking = [
        Expectation("columns_match_schema", True, "downstream SQL reads these columns by name",
                    lambda: _gx().ExpectTableColumnsToMatchSet(column_set=list(RUN_COLUMNS), exact_match=False)),
        Expectation("run_id_unique", True, "a run counted twice doubles its weight on a frontier",
                    lambda: _gx().ExpectColumnValuesToBeUnique(column="run_id")),
        Expectation("no_duplicate_runs", True, "the same measurement twice is not two measurements",
                    lambda: _gx().ExpectColumnValuesToBeNull(column="duplicate_of")),
        Expectation("hw_in_gpu_reference", True, "cost and power come from the GPU reference",
                    lambda: _gx().ExpectColumnValuesToBeInSet(column="hw", value_set=known)),
        Expectation("model_size_known", True, "the tok/s/GPU and tok/s/user ceilings read the model's activated "
                    "parameters", lambda: _gx().ExpectColumnValuesToBeInSet(column="model", value_set=models)),
        *[
            Expectation(f"{col}_present", True, f"sides are keyed by {col}",
                        lambda col=col: _gx().ExpectColumnValuesToNotBeNull(column=col))
            for col in ("model", "framework", "precision", "spec_decoding", "conc")
        ],
        # agentic-trace runs have no nominal ISL/OSL (their sides are keyed by benchmark_type instead)
        *[
            Expectation(f"{col}_present", True, f"fixed-sequence sides are keyed by {col}",
                        lambda col=col: _gx().ExpectColumnValuesToNotBeNull(
                            column=col, row_condition=_column("benchmark_type") != AGENTIC_TRACES))
            for col in ("isl", "osl")
        ],
        Expectation("benchmark_type_known", True, "sides and x-axes are chosen by benchmark_type",
                    lambda: _gx().ExpectColumnValuesToBeInSet(column="benchmark_type",
                                                              value_set=list(BENCHMARK_TYPES))),
        Expectation("agentic_x_present", True, "agentic frontiers are drawn on E2E-normalized interactivity (or, "
                    "without it, on the stand-in mean OSL / p90 E2EL)",
                    lambda: _gx().ExpectColumnValuesToNotBeNull(
                        column="agentic_x_for_metrics", row_condition=_column("benchmark_type") == AGENTIC_TRACES)),
        Expectation("median_tpot_positive", True, "interactivity = 1000 / TPOT",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="median_tpot_s", min_value=0,
                                                                strict_min=True)),
        Expectation("throughput_positive", True, "tok/s/GPU and $/M tokens divide by it",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="throughput_for_metrics", min_value=0,
                                                                strict_min=True)),
        Expectation("completed_positive", True, "a run without completed requests measured nothing",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="completed", min_value=1)),
        Expectation("output_le_total_throughput", True, "output tokens are part of total tokens",
                    lambda: _gx().ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A="total_tput_with_rounding", column_B="output_tput_tok_s", or_equal=True,
                        ignore_row_if="either_value_is_missing")),
        Expectation("ttft_le_e2el", True, "the first token cannot arrive after the last",
                    lambda: _gx().ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A="median_e2el_with_rounding", column_B="median_ttft_s", or_equal=True,
                        ignore_row_if="either_value_is_missing")),
        Expectation("tpot_in_plausible_range", True, f"outside {tpot.min * 1e3:g} ms–{tpot.max:g} s per token a "
                    "unit slipped (plausibility.csv, median_tpot_s)",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="median_tpot_s", min_value=tpot.min,
                                                                max_value=tpot.max)),
    ]
    warnings = [
        Expectation("no_failed_requests", False, "failed requests inflate nothing but hide errors",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="failed_ratio", min_value=0,
                                                                max_value=0.01)),
        Expectation("measured_isl_near_nominal", False, "random range ratio and templates move ISL a little",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="isl_ratio", min_value=0.5,
                                                                max_value=1.5)),
        Expectation("measured_osl_near_nominal", False, "early EOS shortens outputs; far off means a wrong OSL",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="osl_ratio", min_value=0.5,
                                                                max_value=1.5)),
        Expectation("reported_intvty_matches_tpot", False, "sources that report interactivity must agree with TPOT",
                    lambda: _gx().ExpectColumnValuesToBeBetween(column="intvty_x_tpot", min_value=0.99,
                                                                max_value=1.01)),
        Expectation("p99_tpot_ge_median", False, "percentiles out of order suggest a mangled file",
                    lambda: _gx().ExpectColumnPairValuesAToBeGreaterThanB(
                        column_A="p99_tpot_s", column_B="median_tpot_s", or_equal=True,
                        ignore_row_if="either_value_is_missing")),
        Expectation("precision_known", False, "an unfamiliar precision key is usually a typo",
                    lambda: _gx().ExpectColumnValuesToBeInSet(
                        column="precision", value_set=["fp4", "fp8", "bf16", "fp16", "int4", "int8"])),
    ]
    return blocking + warnings


def duplicates_by_run_id(runs: pa.Table) -> dict[tuple[str | None, int], str]:
    """The duplicate rule itself (same content, or same line, conc and numbers within 1e-9) over the accepted runs
    (``runs``: at least ``rules.DUPLICATE_SEARCH_COLUMNS``), keyed so a slice of the table can look its rows up:
    (``run_id``, which copy of that run_id in table order, from 0) of each run that duplicates another → the kept
    run's ``run_id``. Empty when the rules did their job; repeats (same line, sweep and conc, other numbers) are
    measurements and pass. A run_id twice (``run_id_unique`` fails) keeps its copies apart."""
    return _keyed_by_run_id(runs["run_id"], duplicates_in_table(runs)[1])


def stored_duplicates_by_run_id(conn: duckdb.DuckDBPyConnection,
                                table: str = "validated_runs") -> dict[tuple[str | None, int], str]:
    """``duplicates_by_run_id`` of every row of warehouse ``table`` (``RUN_SCHEMA`` columns) in its scan order
    (``rowid``, the order a plain ``select`` of it returns), read as ``pipeline.validate.judge`` reads raw runs:
    ``run_id`` and ``rules.PAIRING_COLUMNS`` of every row, then ``rules.DUPLICATE_SEARCH_COLUMNS`` of only the
    rows ``rules.pairing_rows`` flags (``pipeline.io.storage.rows_by_rowid``; any other row is never a duplicate
    nor the kept copy of one), so the search columns of a million runs are never held at once. The same dict as
    ``duplicates_by_run_id`` of the whole table.

    Raises:
        duckdb.CatalogException: no ``table`` in the warehouse.
    """
    pairing = conn.sql(f"select rowid as _rowid, run_id, {', '.join(PAIRING_COLUMNS)} from {table} "
                       "order by rowid").to_arrow_table()
    at = pairing_rows(pairing)
    flagged = pairing["_rowid"].take(pa.array(at, pa.int64()))
    searched = rows_by_rowid(conn, table, DUPLICATE_SEARCH_COLUMNS, flagged)
    found = duplicates_in_table(searched.drop_columns(["rowid"]))[1]
    return _keyed_by_run_id(pairing["run_id"], {int(at[i]): finding for i, finding in found.items()})


def _keyed_by_run_id(run_ids: pa.ChunkedArray | pa.Array,
                     found: Mapping[int, tuple[str, str, str]]) -> dict[tuple[str | None, int], str]:
    """``duplicates_in_table``'s findings (by position in a table whose ``run_id`` column is ``run_ids``) keyed
    by (``run_id``, which copy of that run_id in table order) → the kept run's ``run_id``."""
    if not found:
        return {}
    named = {run_ids[i].as_py() for i in found}
    same_id = pc.is_in(run_ids, value_set=pa.array([n for n in named if n is not None], pa.string()))
    if None in named:
        same_id = pc.or_(same_id, pc.is_null(run_ids))
    copies: Counter = Counter()
    keyed = {}
    for at in pc.indices_nonzero(pc.fill_null(same_id, False)).to_pylist():
        run_id = run_ids[at].as_py()
        if at in found:
            keyed[(run_id, copies[run_id])] = found[at][2]
        copies[run_id] += 1
    return keyed


def with_derived_columns(runs: pa.Table, duplicate_of: Mapping[tuple[str | None, int], str]) -> pd.DataFrame:
    """``runs`` as pandas plus the helper columns some expectations read (ratios are null when an input is);
    ``duplicate_of`` (``duplicates_by_run_id`` of every accepted run, not only these; every copy of a run_id is
    in ``runs``, in table order) fills the column of that name (object dtype, None for a run that duplicates
    nothing)."""
    df = runs.to_pandas(types_mapper=None)
    completed = df["completed"].astype("float64")
    failed = df["failed"].astype("float64").fillna(0.0)
    df["throughput_for_metrics"] = df["total_tput_tok_s"].fillna(df["reported_tput_per_gpu"])
    df["agentic_x_for_metrics"] = df["e2e_norm_intvty_p90"].fillna(df["mean_osl_over_p90_e2el"])
    # the 1e-9 relative rounding allowance of the row rule (rules._consistency), so check and rule test one predicate
    df["total_tput_with_rounding"] = df["total_tput_tok_s"] * (1 + ROUNDING)
    df["median_e2el_with_rounding"] = df["median_e2el_s"] * (1 + ROUNDING)
    df["failed_ratio"] = failed / (completed + failed)
    df["isl_ratio"] = df["total_input_tokens"].astype("float64") / completed / df["isl"].astype("float64")
    df["osl_ratio"] = df["total_output_tokens"].astype("float64") / completed / df["osl"].astype("float64")
    df["intvty_x_tpot"] = df["reported_median_intvty"] * df["median_tpot_s"]
    named = {run_id for run_id, _ in duplicate_of}
    copies: Counter = Counter()
    column: list[str | None] = [None] * len(df)
    if named:
        for at, run_id in enumerate(df["run_id"]):
            if run_id in named:
                column[at] = duplicate_of.get((run_id, copies[run_id]))
                copies[run_id] += 1
    df["duplicate_of"] = pd.Series(column, index=df.index, dtype="object")
    return df


# rows GX validates at a time: GX holds a chunk as pandas, several times its Arrow size, so a smaller chunk lowers
# the checks' peak and what stays resident after them, for a few more passes through GX
SUITE_CHUNK_ROWS = 100_000


def suite_chunks(num_rows: int) -> int:
    """How many chunks ``run_suite`` takes ``num_rows`` runs in: at most ``SUITE_CHUNK_ROWS`` rows each on
    average, at least one (an empty table is still checked for its columns)."""
    return max(1, -(-num_rows // SUITE_CHUNK_ROWS))


def run_suite(chunks: Iterable[pa.Table], known_hw: Iterable[str],
              duplicate_of: Mapping[tuple[str | None, int], str]) -> list[Outcome]:
    """Validate the runs (``RUN_SCHEMA``) against the suite in an ephemeral GX context, a chunk at a time, and
    combine each expectation's results as if GX had seen one table.

    Every expectation of the suite is row-wise (set membership, nulls, ranges, pairs of columns) or a table's
    column set, except ``run_id_unique``: so every copy of one ``run_id`` must be in one chunk, in table order
    (split them by a hash of ``run_id``; the check asset does). Combined: success when every chunk succeeds;
    element and unexpected counts summed; ``unexpected_percent`` GX's definition (of the non-missing values)
    over the sums; examples the first five in chunk order.

    Args:
        chunks: the validated runs, split by ``run_id`` as above; at least one chunk (possibly empty).
        known_hw: the GPU reference's ``hw`` keys.
        duplicate_of: ``duplicates_by_run_id`` of all the validated runs (the duplicate rule needs them all).
    Returns:
        One Outcome per expectation, in suite order (``model_size_known`` reads the model keys of
        ``model_active_params.csv``, ``build_suite``'s default).
    Raises:
        ValueError: ``chunks`` is empty.
        PlausibilityError: the plausibility reference cannot be used.
    """
    suite_items = build_suite(known_hw)
    per_chunk = _validate_chunks(chunks, suite_items, duplicate_of)
    # collected only now that _validate_chunks has returned: while its frame was alive, its locals (the context,
    # the batch definition, through them GX's metric cache and the last chunk's frame) could not be freed
    if sum(c["rows"] for c in per_chunk) >= COLLECT_MIN_ROWS:
        gc.collect()
    if not per_chunk:
        raise ValueError("run_suite needs at least one chunk of runs (an empty table is a chunk)")
    return [_combined(item, [(c["rows"], c["results"][item.gx.id]) for c in per_chunk]) for item in suite_items]


def _validate_chunks(chunks: Iterable[pa.Table], suite_items: list[Expectation],
                     duplicate_of: Mapping[tuple[str | None, int], str]) -> list[dict[str, Any]]:
    """``suite_items`` validated on each chunk in an ephemeral GX context: one ``{"rows": int, "results":
    {expectation id: GX result}}`` per chunk, in order; the context let go of (``_release``) however it ends."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batches = (
        context.data_sources.add_pandas("warehouse")
        .add_dataframe_asset("validated_runs")
        .add_batch_definition_whole_dataframe("all_rows")
    )
    suite = context.suites.add(gx.ExpectationSuite(name="validated_runs", expectations=[i.gx for i in suite_items]))
    per_chunk: list[dict[str, Any]] = []
    try:
        for chunk in chunks:
            frame = with_derived_columns(chunk, duplicate_of)
            batch = batches.get_batch(batch_parameters={"dataframe": frame})
            # BASIC: the counts and the first unexpected values, all an Outcome reads; GX's default (SUMMARY) also
            # counts every unexpected value and lists their indexes, which nothing here shows
            by_id = {result.expectation_config.id: result
                     for result in batch.validate(suite, result_format="BASIC").results}
            per_chunk.append({"rows": chunk.num_rows, "results": by_id})
            del frame, batch
    finally:
        _release(context)
    return per_chunk


# From this many validated rows on, run_suite collects garbage itself once GX is done: GX's objects hold the last
# chunk's DataFrame in cycles, which only a collection frees. A full collection walks every object of the
# process (Dagster's, GX's, pandas'), a fixed cost worth paying where the frames weigh on the process's peak,
# not for a small table, which the interpreter's next automatic collection frees.
COLLECT_MIN_ROWS = 10_000


def _release(context: Any) -> None:
    """Let go of what GX keeps after a validation: ``gx.get_context`` makes the context its process-wide project,
    which holds the data source and through it the last chunk's DataFrame and GX's caches; kept, they stay
    resident in the process that ran the checks. What they held is garbage once the caller's references to the
    context are gone (GX's objects hold each other in cycles: a collection frees them)."""
    from great_expectations.data_context.data_context.context_factory import project_manager
    from great_expectations.exceptions import DataContextRequiredError

    context.data_sources.delete("warehouse")
    try:
        current = project_manager.get_current_project()
    except DataContextRequiredError:  # none set
        return
    if current is context:  # never another caller's project
        project_manager.set_project(None)


def _combined(item: Expectation, results: list[tuple[int, Any]]) -> Outcome:
    """One expectation's Outcome from its GX result in every chunk ((chunk rows, result) pairs)."""
    element = unexpected = missing = 0
    examples: list[str] = []
    for rows, result in results:
        stats = result.result or {}
        counted = stats.get("element_count")  # absent for the table-level column check: the chunk's rows
        element += int(counted) if counted is not None else rows
        unexpected += int(stats.get("unexpected_count") or 0)
        missing += int(stats.get("missing_count") or 0)
        examples += [str(x) for x in (stats.get("partial_unexpected_list") or [])]
    assessed = element - missing
    return Outcome(
        name=item.name,
        blocking=item.blocking,
        success=all(bool(result.success) for _, result in results),
        element_count=element,
        unexpected_count=unexpected,
        unexpected_percent=100.0 * unexpected / assessed if assessed else 0.0,
        examples=examples[:5],
    )
