"""``pipeline.validate.judge.judge_raw_runs`` judges the warehouse's raw runs a group of dates at a time; its
verdicts must be ``accepted_runs``' over the whole table at once: the keep rule of a duplicate whose kept copy lies
in a later group, a run unique in its batch that duplicates another date's accepted run, rule rejections in every
group."""

import sys

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import REPO, SAMPLE_DIR

from pipeline.ingest.folder import ingest_folder
from pipeline.ingest.schema import QUARANTINE_SCHEMA
from pipeline.metrics.reference import load_gpu_reference
from pipeline.io.storage import date_groups, rows_by_rowid, table_names
from pipeline.validate.judge import judge_raw_runs
from pipeline.validate.rules import RUN_SCHEMA, accepted_runs

sys.path.insert(0, str(REPO))
from benchmarks.generate import generate  # noqa: E402

KNOWN_HW = load_gpu_reference().column("hw").to_pylist()
DAYS = ("2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04")


@pytest.fixture(scope="module")
def raw_runs(tmp_path_factory) -> pa.Table:
    """Four generated nights, the sample and the bad-input corpus (rule rejections, undated runs), plus copies of
    early runs re-dated to the last night under a file name that sorts first: same content, or same numbers under
    another content hash (kept: the copy, whose group is judged last)."""
    root = tmp_path_factory.mktemp("judge")
    for seed, day in enumerate(DAYS, start=1):
        generate(60, root / day, seed=seed, run_date=day)
    runs = pa.concat_tables([ingest_folder(folder).runs.cast(RUN_SCHEMA)
                             for folder in (root, SAMPLE_DIR, REPO / "tests" / "bad_inputs")])
    first = runs.filter(pc.equal(runs["run_date_partition"], DAYS[0])).slice(0, 6)
    copies = first.to_pylist()
    for i, row in enumerate(copies):
        row.update(source_file=f"0-copy/{i}.json", run_id=f"copy-{i}", run_date_partition=DAYS[-1])
        if i % 2:
            row["content_sha256"] = f"other-{i}"
    return pa.concat_tables([runs, pa.Table.from_pylist(copies, schema=RUN_SCHEMA)])


def _warehouse(runs: pa.Table) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect()
    conn.register("_runs", runs)
    conn.execute("create table raw_runs as select * from _runs")
    conn.unregister("_runs")
    return conn


def _rejects(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (r["source_file"], r["source_row"] or 0))


def _accepted_ids(conn, rejected_rows, keys) -> list[str]:
    rejected = set(rejected_rows.to_pylist())
    return sorted(run_id for row, run_id in conn.execute(
        "select rowid, run_id from raw_runs where list_contains($keys, run_date_partition)", {"keys": keys}
    ).fetchall() if row not in rejected)


@pytest.mark.parametrize("max_rows", [1, 50, 10_000])
def test_judging_by_groups_of_dates_gives_the_whole_tables_verdicts(raw_runs, max_rows):
    conn = _warehouse(raw_runs)
    keys = sorted(set(raw_runs["run_date_partition"].to_pylist()))
    judged = judge_raw_runs(conn, keys, KNOWN_HW, max_rows=max_rows)
    accepted, rejects = accepted_runs(raw_runs, KNOWN_HW)
    reasons = set(rejects["reason_code"].to_pylist())
    assert "duplicate_run" in reasons and len(reasons) > 2  # duplicates and rule rejections both judged
    kept = [r for r in rejects.to_pylist() if r["source_file"].endswith(".json") and r["duplicate_of"] == "copy-0"]
    assert kept  # a copy in the last group is the kept one: the earlier group's run is its duplicate
    assert _rejects(judged.rejects) == _rejects(rejects)
    accepted_ids = sorted(raw_runs["run_id"].filter(pa.array(accepted)).to_pylist())
    assert _accepted_ids(conn, judged.rejected_rows, keys) == accepted_ids
    assert judged.accepted == int(accepted.sum())
    groups = date_groups(conn, "raw_runs", keys, max_rows)
    assert [key for group in groups for key in group] == keys
    # one date a group; groups of several dates; one group
    assert len(groups) == {1: len(keys), 50: 7, 10_000: 1}[max_rows]
    # the preview is accepted runs only, the first group's first ones
    assert set(judged.preview["run_id"].to_pylist()) <= set(accepted_ids)
    assert judged.preview.num_rows > 0 and judged.preview.schema == RUN_SCHEMA


def _with_validated_runs(raw_runs: pa.Table, batch_keys: list[str], drop: tuple[str, ...] = ()):
    """A warehouse whose ``validated_runs`` holds the accepted runs of the dates outside ``batch_keys`` (without
    the columns ``drop``: a table stored before a schema change), and the raw runs of ``batch_keys``."""
    conn = _warehouse(raw_runs)
    in_batch = pc.is_in(raw_runs["run_date_partition"], value_set=pa.array(batch_keys))
    earlier = raw_runs.filter(pc.invert(in_batch))
    accepted_earlier, _ = accepted_runs(earlier, KNOWN_HW)
    conn.register("_validated", earlier.filter(pa.array(accepted_earlier)).drop_columns(list(drop)))
    conn.execute("create table validated_runs as select * from _validated")
    conn.unregister("_validated")
    return conn, raw_runs.filter(in_batch)


def test_a_batch_run_unique_in_its_batch_is_a_duplicate_of_another_dates_accepted_run(raw_runs):
    """The nightly case: the last night's dates against the other dates' accepted runs (``validated_runs``),
    judged one date a group, as ``accepted_runs`` with every other accepted run as ``accepted_elsewhere``."""
    batch_keys = [DAYS[-1]]
    conn, batch = _with_validated_runs(raw_runs, batch_keys)
    validated = conn.sql("select * from validated_runs").to_arrow_table().cast(RUN_SCHEMA)
    accepted, rejects = accepted_runs(batch, KNOWN_HW, validated)
    judged = judge_raw_runs(conn, batch_keys, KNOWN_HW, max_rows=1)
    of_copies = [r for r in rejects.to_pylist() if r["source_file"].startswith("0-copy/")]
    assert len(of_copies) == 6  # each copy is unique in its night and a duplicate of the first night's run
    assert _rejects(judged.rejects) == _rejects(rejects)
    assert _accepted_ids(conn, judged.rejected_rows, batch_keys) == sorted(
        batch["run_id"].filter(pa.array(accepted)).to_pylist())


def test_no_raw_runs_in_the_dates_judges_nothing(raw_runs):
    conn = _warehouse(raw_runs)
    judged = judge_raw_runs(conn, ["2031-01-01"], KNOWN_HW)
    counts = (judged.accepted, judged.rejects.num_rows, len(judged.rejected_rows), judged.preview.num_rows)
    assert counts == (0, 0, 0, 0)
    assert np.asarray(judged.rejected_rows).dtype == np.int64


def test_the_rejects_have_the_quarantine_schema_with_or_without_rows(raw_runs):
    """The caller appends ``rejects`` to the quarantine table: its columns and types are ``QUARANTINE_SCHEMA``'s
    whether the dates hold rejections or none (an empty list has no columns to infer)."""
    conn = _warehouse(raw_runs)
    none = judge_raw_runs(conn, ["2031-01-01"], KNOWN_HW).rejects
    some = judge_raw_runs(conn, sorted(set(raw_runs["run_date_partition"].to_pylist())), KNOWN_HW).rejects
    assert (none.num_rows, some.num_rows > 0) == (0, True)
    assert none.schema == some.schema == QUARANTINE_SCHEMA


def test_judging_leaves_no_relation_of_its_own_registered(raw_runs):
    """The batch (``_batch``) and the rows to search (``rows_by_rowid``'s) are registered on the caller's warehouse
    connection only while their query runs: the connection is the asset's, and a name left behind would shadow
    (or be read as) a table of that name."""
    conn, _ = _with_validated_runs(raw_runs, [DAYS[-1]])
    before = table_names(conn)
    judge_raw_runs(conn, [DAYS[-1]], KNOWN_HW, max_rows=1)
    assert table_names(conn) == before == {"raw_runs", "validated_runs"}


def test_rows_by_rowid_reads_the_asked_rows_in_rowid_order_and_registers_nothing():
    """Rowids asked out of order, one twice, one past the table's end, after deletes left gaps: each row present
    once, in rowid order, with its rowid first and only the columns asked; nothing stays registered."""
    conn = duckdb.connect()
    conn.execute("create table t as select i as a, 'row ' || i as b, i * 0.5 as c from range(10) r(i)")
    conn.execute("delete from t where a in (2, 3)")
    before = table_names(conn)
    got = rows_by_rowid(conn, "t", ["b", "a"], pa.array([7, 1, 7, 42, 2, 4], pa.int64()))
    assert got.column_names == ["rowid", "b", "a"]
    assert got.to_pylist() == [{"rowid": 1, "b": "row 1", "a": 1}, {"rowid": 4, "b": "row 4", "a": 4},
                               {"rowid": 7, "b": "row 7", "a": 7}]
    assert table_names(conn) == before == {"t"}


def test_a_validated_runs_table_of_an_older_schema_is_not_searched_for_duplicates(raw_runs):
    """``validated_runs`` stored before a schema change (here: without its last column) is not the raw runs'
    schema; this run rebuilds it, so its rows are not the other dates' accepted runs: the batch is judged alone,
    as ``accepted_runs`` without ``accepted_elsewhere``, and the re-dated copies of the first night's runs are
    accepted (against the first night they are duplicates: the test above)."""
    batch_keys = [DAYS[-1]]
    conn, batch = _with_validated_runs(raw_runs, batch_keys, drop=(RUN_SCHEMA.names[-1],))
    accepted, rejects = accepted_runs(batch, KNOWN_HW)
    judged = judge_raw_runs(conn, batch_keys, KNOWN_HW, max_rows=1)
    assert _rejects(judged.rejects) == _rejects(rejects)
    accepted_ids = _accepted_ids(conn, judged.rejected_rows, batch_keys)
    assert accepted_ids == sorted(batch["run_id"].filter(pa.array(accepted)).to_pylist())
    assert {f"copy-{i}" for i in range(6)} <= set(accepted_ids)


def test_the_preview_is_the_accepted_runs_among_the_first_preview_rows_raw_rows_of_the_first_group(raw_runs):
    """``preview_rows`` bounds the raw rows the preview is chosen from (storage order, first group of dates
    only), not the accepted ones it shows: the expected preview is read back by rowid and judged by
    ``accepted_runs`` over the whole table."""
    conn = _warehouse(raw_runs)
    keys = sorted(set(raw_runs["run_date_partition"].to_pylist()))
    first_group = date_groups(conn, "raw_runs", keys, 50)[0]
    first_rows = [run_id for (run_id,) in conn.execute(
        "select run_id from raw_runs where list_contains($keys, run_date_partition) order by rowid limit 7",
        {"keys": first_group}).fetchall()]
    accepted, _ = accepted_runs(raw_runs, KNOWN_HW)
    accepted_ids = set(raw_runs["run_id"].filter(pa.array(accepted)).to_pylist())
    judged = judge_raw_runs(conn, keys, KNOWN_HW, max_rows=50, preview_rows=7)
    assert judged.preview["run_id"].to_pylist() == [r for r in first_rows if r in accepted_ids]
    assert judged.preview.num_rows > 0 and judged.preview.schema == RUN_SCHEMA
