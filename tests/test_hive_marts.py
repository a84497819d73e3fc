"""Hive-partitioned run-level marts (pipeline/io/storage.py): a write replaces the given dates' files only, removes
partitions whose runs are gone, and the folder reads in place with DuckDB and PyArrow."""

import datetime as dt
import os

import duckdb
import pyarrow as pa

from pipeline.io.storage import HIVE_NULL, read_mart, replace_hive_partitions

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
    replace_hive_partitions(_runs([("dsr1", D1, 1.0), ("dsr1", D2, 2.0), ("qwen", D1, 3.0), ("qwen", None, 4.0)]),
                            mart, ["2026-07-01", "2026-07-02", "undated"])
    assert not legacy.exists()
    assert _files(mart) == ["model=dsr1/run_date=2026-07-01/part-0.parquet",
                            "model=dsr1/run_date=2026-07-02/part-0.parquet",
                            "model=qwen/run_date=2026-07-01/part-0.parquet",
                            f"model=qwen/run_date={HIVE_NULL}/part-0.parquet"]
    rows = sorted(read_mart(tmp_path, "runs").to_pylist(), key=lambda r: r["tput_per_gpu"])
    assert rows == [{"tput_per_gpu": 1.0, "model": "dsr1", "run_date": D1},
                    {"tput_per_gpu": 2.0, "model": "dsr1", "run_date": D2},
                    {"tput_per_gpu": 3.0, "model": "qwen", "run_date": D1},
                    {"tput_per_gpu": 4.0, "model": "qwen", "run_date": None}]
    in_place = duckdb.sql(f"select model, run_date, tput_per_gpu from read_parquet('{mart}/**/*.parquet', "
                          "hive_partitioning = true) order by tput_per_gpu").fetchall()
    assert in_place == [(r["model"], r["run_date"], r["tput_per_gpu"]) for r in rows]


def test_a_date_is_replaced_and_other_dates_are_not_touched(tmp_path):
    mart = tmp_path / "runs"
    replace_hive_partitions(_runs([("dsr1", D1, 1.0), ("qwen", D1, 3.0), ("dsr1", D2, 2.0)]), mart,
                            ["2026-07-01", "2026-07-02"])
    untouched = mart / "model=dsr1" / "run_date=2026-07-02" / "part-0.parquet"
    before = (untouched.stat().st_mtime_ns, untouched.read_bytes())
    # 2026-07-01 again: dsr1 changed, qwen's runs are gone
    replace_hive_partitions(_runs([("dsr1", D1, 5.0)]), mart, ["2026-07-01"])
    assert _files(mart) == ["model=dsr1/run_date=2026-07-01/part-0.parquet",
                            "model=dsr1/run_date=2026-07-02/part-0.parquet"]
    assert (untouched.stat().st_mtime_ns, untouched.read_bytes()) == before
    assert sorted(r["tput_per_gpu"] for r in read_mart(tmp_path, "runs").to_pylist()) == [2.0, 5.0]


def test_a_killed_writers_staging_folder_is_removed(tmp_path):
    mart = tmp_path / "runs"
    dead = tmp_path / ".runs.staging-999999999"  # no such pid
    (dead / "model=x").mkdir(parents=True)
    (dead / "model=x" / "part-0.parquet").write_bytes(b"half")
    mine = tmp_path / f".runs.staging-{os.getpid()}-keep"  # not a staging name of ours: left alone
    mine.mkdir()
    replace_hive_partitions(_runs([("dsr1", D1, 1.0)]), mart, ["2026-07-01"])
    assert not dead.exists() and mine.exists()
    assert not list(tmp_path.glob(f".runs.staging-{os.getpid()}"))


def test_model_names_with_slashes_and_spaces_are_percent_encoded_and_read_back(tmp_path):
    mart = tmp_path / "runs"
    model = "deepseek-ai/DeepSeek R1=0528"
    replace_hive_partitions(_runs([(model, D1, 1.0)]), mart, ["2026-07-01"])
    assert _files(mart) == ["model=deepseek-ai%2FDeepSeek%20R1%3D0528/run_date=2026-07-01/part-0.parquet"]
    assert read_mart(tmp_path, "runs").to_pylist() == [{"tput_per_gpu": 1.0, "model": model, "run_date": D1}]
    assert duckdb.sql(f"select model from read_parquet('{mart}/**/*.parquet', hive_partitioning = true)")\
        .fetchall() == [(model,)]
