"""Marts with rows per raw file (pipeline/io/file_marts.py): base + recent always hold exactly the warehouse
table's rows; a night of new files rewrites recent only; anything else, or a mart that is not the state the
warehouse last wrote, folds."""

import shutil

import duckdb
import pyarrow.dataset as ds
import pytest

from pipeline.io.file_marts import BASE, RECENT, write_file_mart
from pipeline.io.storage import content_hash


@pytest.fixture
def warehouse():
    conn = duckdb.connect()
    conn.execute("create table ledger as select 'old/' || lpad(i::varchar, 3, '0') || '.json' as source_file, "
                 "i as rows_read from range(100) t(i)")
    yield conn
    conn.close()


def _night(conn, files: list[str], rows_read: int) -> str:
    """Replace (or add) ``files``' rows; returns the table naming them, as a run's update would."""
    conn.execute("create or replace temp table changed as select unnest($files) as source_file", {"files": files})
    conn.execute("delete from ledger where source_file in (select source_file from changed)")
    conn.execute("insert into ledger select source_file, $n from changed", {"n": rows_read}).fetchall()
    return "changed"


def _mart_equals_table(conn, folder) -> bool:
    mart = ds.dataset(folder, format="parquet").to_table()
    return content_hash(mart.replace_schema_metadata(None)) == content_hash(conn.sql("select * from ledger").to_arrow_table())


def test_nights_of_new_files_write_recent_and_leave_base_alone(warehouse, tmp_path):
    folder = tmp_path / "ledger"
    (tmp_path / "ledger.parquet").write_bytes(b"an earlier layout")
    first = write_file_mart(warehouse, "ledger", folder, None, "source_file")
    assert first.folded and first.rows_written == 100 and not (tmp_path / "ledger.parquet").exists()
    base = (folder / BASE).stat()
    for night in range(3):
        new = [f"night{night}/{i}.json" for i in range(4)]
        written = write_file_mart(warehouse, "ledger", folder, _night(warehouse, new, night), "source_file")
        assert not written.folded and written.rows_written == 4 * (night + 1)  # recent holds every night since
        assert (folder / BASE).stat().st_ino == base.st_ino and (folder / BASE).stat().st_mtime_ns == base.st_mtime_ns
        assert _mart_equals_table(warehouse, folder)
    recent = ds.dataset(folder / RECENT, format="parquet").to_table()
    assert recent["source_file"].to_pylist() == sorted(recent["source_file"].to_pylist())  # sorted by order_by


def test_a_changed_base_file_folds(warehouse, tmp_path):
    folder = tmp_path / "ledger"
    write_file_mart(warehouse, "ledger", folder, None, "source_file")
    write_file_mart(warehouse, "ledger", folder, _night(warehouse, ["night/0.json"], 1), "source_file")
    written = write_file_mart(warehouse, "ledger", folder, _night(warehouse, ["old/007.json"], 70), "source_file")
    assert written.folded and written.reason == "1 changed files are in base"
    assert not (folder / RECENT).exists() and _mart_equals_table(warehouse, folder)
    # a removed file is a change too: its row leaves
    warehouse.execute("delete from ledger where source_file = 'old/008.json'")
    warehouse.execute("create or replace temp table gone as select 'old/008.json' as source_file")
    assert write_file_mart(warehouse, "ledger", folder, "gone", "source_file").folded
    assert _mart_equals_table(warehouse, folder)


def test_recent_past_its_share_of_base_folds(warehouse, tmp_path):
    folder = tmp_path / "ledger"
    write_file_mart(warehouse, "ledger", folder, None, "source_file")
    written = write_file_mart(warehouse, "ledger", folder,
                              _night(warehouse, [f"big/{i}.json" for i in range(13)], 0), "source_file")
    assert written.folded and written.reason == "recent would hold 13 files of 100 in base"
    assert _mart_equals_table(warehouse, folder)


@pytest.mark.parametrize("drift", ["recent lost", "older generation"])
def test_a_mart_that_is_not_the_warehouses_last_state_is_rewritten(warehouse, tmp_path, drift):
    """A run that failed after its warehouse commit and before its publish leaves the published mart behind the
    warehouse; the next run's staging starts from that mart, and must not carry it on."""
    folder = tmp_path / "ledger"
    write_file_mart(warehouse, "ledger", folder, None, "source_file")
    before = tmp_path / "published"
    shutil.copytree(folder, before)
    write_file_mart(warehouse, "ledger", folder, _night(warehouse, ["night/0.json"], 1), "source_file")
    if drift == "recent lost":
        (folder / RECENT).unlink()
    else:  # the warehouse moved on, the published generation did not
        shutil.rmtree(folder)
        shutil.copytree(before, folder)
    written = write_file_mart(warehouse, "ledger", folder, _night(warehouse, ["night/1.json"], 2), "source_file")
    assert written.folded and written.reason == "staged files are not the warehouse's last state"
    assert _mart_equals_table(warehouse, folder)
