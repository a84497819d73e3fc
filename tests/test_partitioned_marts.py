"""Date-partitioned run-level marts (pipeline/io/storage.py): a write replaces the given dates' files only, removes
partitions whose runs are gone, and every reader people use (pandas, Polars, DuckDB, PyArrow) opens the folder as it
is, with the same rows, ``model`` as text and ``run_date`` as a date (null for undated runs)."""

import datetime as dt
import os
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.io.storage import read_mart, replace_mart_partitions

D1, D2 = dt.date(2026, 7, 1), dt.date(2026, 7, 2)


def _runs(rows):
    return pa.table({"model": [r[0] for r in rows], "run_date": pa.array([r[1] for r in rows], pa.date32()),
                     "tput_per_gpu": [r[2] for r in rows]})


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_layout_and_round_trip(tmp_path):
    mart = tmp_path / "runs"
    legacy = tmp_path / "runs.parquet"  # the single-file layout of earlier versions
    legacy.write_bytes(b"stale")
    hive = mart / "model=dsr1" / "run_date=2026-07-01"  # the Hive layout of earlier versions
    hive.mkdir(parents=True)
    (hive / "part-0.parquet").write_bytes(b"stale")
    replace_mart_partitions(_runs([("dsr1", D1, 1.0), ("dsr1", D2, 2.0), ("qwen", D1, 3.0), ("qwen", None, 4.0)]),
                            mart, ["2026-07-01", "2026-07-02", "undated"])
    assert not legacy.exists()
    assert _files(mart) == ["dsr1/2026-07-01/part-0.parquet", "dsr1/2026-07-02/part-0.parquet",
                            "qwen/2026-07-01/part-0.parquet", "qwen/undated/part-0.parquet"]
    rows = sorted(read_mart(tmp_path, "runs").to_pylist(), key=lambda r: r["tput_per_gpu"])
    assert rows == [{"model": "dsr1", "run_date": D1, "tput_per_gpu": 1.0},
                    {"model": "dsr1", "run_date": D2, "tput_per_gpu": 2.0},
                    {"model": "qwen", "run_date": D1, "tput_per_gpu": 3.0},
                    {"model": "qwen", "run_date": None, "tput_per_gpu": 4.0}]


def test_a_date_is_replaced_and_other_dates_are_not_touched(tmp_path):
    mart = tmp_path / "runs"
    replace_mart_partitions(_runs([("dsr1", D1, 1.0), ("qwen", D1, 3.0), ("dsr1", D2, 2.0)]), mart,
                            ["2026-07-01", "2026-07-02"])
    untouched = mart / "dsr1" / "2026-07-02" / "part-0.parquet"
    before = (untouched.stat().st_mtime_ns, untouched.read_bytes())
    # 2026-07-01 again: dsr1 changed, qwen's runs are gone
    replace_mart_partitions(_runs([("dsr1", D1, 5.0)]), mart, ["2026-07-01"])
    assert _files(mart) == ["dsr1/2026-07-01/part-0.parquet", "dsr1/2026-07-02/part-0.parquet"]
    assert (untouched.stat().st_mtime_ns, untouched.read_bytes()) == before
    assert sorted(r["tput_per_gpu"] for r in read_mart(tmp_path, "runs").to_pylist()) == [2.0, 5.0]


def test_a_killed_writers_staging_folder_is_removed(tmp_path):
    mart = tmp_path / "runs"
    dead = tmp_path / ".runs.staging-999999999"  # no such pid
    (dead / "x").mkdir(parents=True)
    (dead / "x" / "part-0.parquet").write_bytes(b"half")
    mine = tmp_path / f".runs.staging-{os.getpid()}-keep"  # not a staging name of ours: left alone
    mine.mkdir()
    replace_mart_partitions(_runs([("dsr1", D1, 1.0)]), mart, ["2026-07-01"])
    assert not dead.exists() and mine.exists()
    assert not list(tmp_path.glob(f".runs.staging-{os.getpid()}"))


def test_model_names_with_slashes_and_spaces_are_percent_encoded_and_read_back(tmp_path):
    mart = tmp_path / "runs"
    model = "deepseek-ai/DeepSeek R1=0528"
    replace_mart_partitions(_runs([(model, D1, 1.0)]), mart, ["2026-07-01"])
    assert _files(mart) == ["deepseek-ai%2FDeepSeek%20R1%3D0528/2026-07-01/part-0.parquet"]
    assert read_mart(tmp_path, "runs").to_pylist() == [{"model": model, "run_date": D1, "tput_per_gpu": 1.0}]


def read_with_every_reader(folder) -> dict[str, list[tuple]]:
    """(model, run_date as datetime.date or None, tput_per_gpu) rows as each reader returns them, sorted, after
    checking that reader's types: text model, date run_date."""
    out = {}
    frame = pd.read_parquet(folder)
    assert pd.api.types.is_string_dtype(frame["model"]) and not isinstance(frame["model"].dtype, pd.CategoricalDtype)
    assert all(type(d) is dt.date for d in frame["run_date"].dropna())  # dates, not text or categories
    out["pandas"] = [(m, None if pd.isna(d) else d, x)
                     for m, d, x in frame[["model", "run_date", "tput_per_gpu"]].itertuples(index=False)]
    for name, frame in (("polars.read_parquet", pl.read_parquet(f"{folder}/**/*.parquet")),
                        ("polars.scan_parquet", pl.scan_parquet(f"{folder}/**/*.parquet").collect())):
        assert frame.schema["model"] == pl.String and frame.schema["run_date"] == pl.Date
        out[name] = list(frame.select("model", "run_date", "tput_per_gpu").iter_rows())
    for hive in ("true", "false"):
        relation = duckdb.sql(f"select model, run_date, tput_per_gpu from read_parquet('{folder}/**/*.parquet', "
                              f"hive_partitioning = {hive})")
        assert [str(t) for t in relation.types[:2]] == ["VARCHAR", "DATE"]
        out[f"duckdb hive={hive}"] = relation.fetchall()
    out["pyarrow.dataset"] = [tuple(r.values()) for r in read_mart(folder.parent, folder.name)
                              .select(["model", "run_date", "tput_per_gpu"]).to_pylist()]
    return {name: sorted(rows, key=lambda r: (r[0], r[1] or dt.date.min, r[2])) for name, rows in out.items()}


def test_every_reader_opens_the_folder_with_date_typed_run_date(tmp_path):
    mart = tmp_path / "runs"
    replace_mart_partitions(_runs([("dsr1", D1, 1.0), ("dsr1", None, 2.0), ("qwen", D2, 3.0)]), mart,
                            ["2026-07-01", "2026-07-02", "undated"])
    expected = [("dsr1", None, 2.0), ("dsr1", D1, 1.0), ("qwen", D2, 3.0)]
    for reader, rows in read_with_every_reader(mart).items():
        assert rows == expected, reader


@pytest.mark.parametrize("name", ["runs", "trends"])
def test_pipeline_marts_read_alike_in_every_reader(sample_run, name):
    run = sample_run
    assert run.result.success
    folder = run.out_dir / name
    if name == "trends":  # trends has no tput for out-of-range dates; compare on the columns every row has
        frame = pd.read_parquet(folder)
        assert len(frame) == read_mart(run.out_dir, name).num_rows > 0
        assert pl.read_parquet(f"{folder}/**/*.parquet").schema["run_date"] == pl.Date
        return
    readers = read_with_every_reader(folder)
    counts = {reader: len(rows) for reader, rows in readers.items()}
    assert set(counts.values()) == {84}, counts  # the sample's accepted runs
    assert len({tuple(rows) for rows in readers.values()}) == 1
    assert any(row[1] is None for row in readers["pandas"])  # the undated InferenceX export rows


def test_runs_written_a_few_partitions_at_a_time_equal_runs_written_at_once(sample_run, tmp_path, monkeypatch):
    """``write_runs_mart`` sorts ``runs/`` in groups of whole run dates and writes it a few whole partitions at a
    time as the sorted rows stream in: the same files with the same rows in the same order as one read of every
    row; the first rows written are whole partitions of the earliest date; a date folder whose runs are gone is removed, other dates' folders are not touched."""
    import pipeline.defs.metrics.assets as metrics_assets

    conn = duckdb.connect(str(sample_run.db_path), read_only=True)
    dates = [row[0] for row in conn.execute("select distinct run_date_partition from run_metrics order by 1").fetchall()]
    whole = conn.sql("select * from run_metrics order by model, run_date nulls last, price_book, source_file, "
                     "source_row").to_arrow_table()
    one = tmp_path / "one" / "runs"
    first_one, rows_one, written_one = metrics_assets.write_runs_mart(conn, one, dates)
    monkeypatch.setattr(metrics_assets, "MART_CHUNK_ROWS", 7)
    monkeypatch.setattr(metrics_assets, "MART_WRITE_ROWS", 3)  # partitions of more rows are read on, not split
    few = tmp_path / "few" / "runs"
    stale = few / "gone-model" / dates[0]
    stale.mkdir(parents=True)
    (stale / "part-0.parquet").write_bytes(b"runs that left")
    other = few / "gone-model" / "1999-01-01"
    other.mkdir(parents=True)
    (other / "part-0.parquet").write_bytes(b"another date")
    groups = []
    real_write = metrics_assets.write_mart_partitions
    monkeypatch.setattr(metrics_assets, "write_mart_partitions",
                        lambda table, folder: groups.append(table.num_rows) or real_write(table, folder))
    first_few, rows_few, written_few = metrics_assets.write_runs_mart(conn, few, dates)
    assert rows_one == rows_few == whole.num_rows and first_one.equals(whole)
    assert len(groups) > 1 and sum(groups) == whole.num_rows, groups
    # the first rows written: whole partitions of the earliest date, in the files' order
    earliest = whole.filter(pc.equal(whole["run_date_partition"], dates[0]))
    assert 0 < first_few.num_rows < earliest.num_rows and first_few.equals(earliest.slice(0, first_few.num_rows))
    partitions = {(r["model"], r["run_date"]) for r in first_few.select(["model", "run_date"]).to_pylist()}
    assert sum(1 for r in earliest.select(["model", "run_date"]).to_pylist()
               if (r["model"], r["run_date"]) in partitions) == first_few.num_rows
    assert len(written_few) == len(written_one) >= 3
    assert not stale.exists() and (other / "part-0.parquet").read_bytes() == b"another date"
    for path in _files(one):
        assert pa.parquet.read_table(one / path).equals(pa.parquet.read_table(few / path)), path
    assert set(_files(few)) == set(_files(one)) | {"gone-model/1999-01-01/part-0.parquet"}


def test_an_empty_partitioned_mart_opens_in_every_reader(sample_run):
    """The sample saves no per-request records, so its ``requests/`` mart has no partition, and DuckDB's
    and Polars' globs raised on it. It holds one file of the mart's columns and no rows: every reader opens it as
    an empty table with those columns."""
    import pyarrow.dataset as pads

    from pipeline.ingest.requests import REQUEST_SCHEMA

    folder = sample_run.out_dir / "requests"
    assert folder.is_dir() and [p.name for p in folder.rglob("*.parquet")] == ["empty.parquet"]
    names = set(REQUEST_SCHEMA.names)
    table = pads.dataset(folder, format="parquet").to_table()
    assert table.num_rows == 0 and names <= set(table.column_names)
    frame = pd.read_parquet(folder)
    assert len(frame) == 0 and names <= set(frame.columns)
    polars = pl.read_parquet(f"{folder}/**/*.parquet")
    assert polars.height == 0 and names <= set(polars.columns)
    with duckdb.connect() as conn:
        rel = conn.sql(f"select * from read_parquet('{folder}/**/*.parquet')")
        assert rel.fetchall() == [] and names <= set(rel.columns)
    # a mart with rows has no such file beside its partitions
    assert "empty.parquet" not in [p.name for p in (sample_run.out_dir / "runs").rglob("*.parquet")]


def test_the_readmes_first_reading_example_gives_one_row_per_comparison_target_and_side(sample_run):
    """The README's first DuckDB example printed every comparison row once per SLO (the unconstrained
    rows and the SLO-restricted ones share comparisons.parquet). Run as written against the sample's marts, it
    returns each (comparison, target, side) once."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    reading = readme[readme.index("### Reading the marts"):]
    query = re.search(r'duckdb\.sql\(\\"(.*?)\\"\)', reading).group(1)
    assert "comparisons.parquet" in query
    query = query.replace("data/marts/", f"{sample_run.out_dir}/")
    with duckdb.connect() as conn:
        rows = conn.sql(query).fetchall()
        keys = conn.sql(query.replace("select title, side_label, target_intvty,",
                                      "select distinct comparison_id, side, target_index,")).fetchall()
    assert rows and len(rows) == len(keys)
