"""Only regular files inside the raw folder are read: a symlink leaving the folder, a FIFO, a socket and a
power_log pointing outside are refused before anything is opened, each with a named reason, and no text of an
outside file reaches a row."""

import os
import shutil
import socket
import threading

import pytest
from conftest import SAMPLE_DIR

from pipeline.ingest.folder import ingest_folder
from pipeline.metrics.power import measure_runs

GOOD = "dsr1_1k1k_h200_fp8_vllm_none_conc16.json"
SECRET = "root:x:0:0:do-not-publish"


@pytest.fixture
def raw(tmp_path):
    """A raw folder with one good vLLM run (its runs.csv row as metadata), and a folder outside it holding a
    second valid run log and a secret text file."""
    folder, outside = tmp_path / "raw", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    shutil.copy(SAMPLE_DIR / "vllm" / "h200" / GOOD, folder / GOOD)
    header, *rows = (SAMPLE_DIR / "vllm" / "h200" / "runs.csv").read_text().splitlines()
    row = next(r for r in rows if r.startswith(GOOD + ","))
    (folder / "runs.csv").write_text("\n".join([header, row, row.replace(GOOD, "escaped.json", 1)]) + "\n")
    shutil.copy(SAMPLE_DIR / "vllm" / "h200" / GOOD, outside / "run.json")
    (outside / "passwd").write_text(SECRET + "\n")
    return folder, outside


def _reasons(result):
    return {r["source_file"]: r["reason_code"] for r in result.rejects.to_pylist()}


def test_symlink_to_a_file_outside_is_refused_unread(raw):
    folder, outside = raw
    os.symlink(outside / "run.json", folder / "escaped.json")  # a valid run log, but outside the folder
    os.symlink(outside / "passwd", folder / "x.json")
    os.symlink(GOOD, folder / "inside_alias.json")  # a symlink that stays inside is read as before
    result = ingest_folder(folder)
    reasons = _reasons(result)
    assert reasons["escaped.json"] == "symlink_outside_raw_dir"
    assert reasons["x.json"] == "symlink_outside_raw_dir"
    assert sorted(r["source_file"] for r in result.runs.to_pylist()) == [GOOD, "inside_alias.json"]
    assert SECRET not in str(result.rejects.to_pylist()) + str(result.files.to_pylist())
    files = {f["source_file"]: f for f in result.files.to_pylist()}
    assert files["x.json"]["sha256"] is None and files["x.json"]["rows_read"] == 1  # one ledger row, not hashed


def test_fifo_and_socket_are_refused_without_blocking(raw, tmp_path):
    folder, _ = raw
    os.mkfifo(folder / "pipe.json")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock.json"))
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(result=ingest_folder(folder)), daemon=True)
    worker.start()
    worker.join(timeout=20)  # opening the FIFO would block forever
    server.close()
    assert not worker.is_alive(), "ingest blocked on a FIFO"
    reasons = _reasons(outcome["result"])
    assert reasons["pipe.json"] == "not_a_regular_file" and reasons["sock.json"] == "not_a_regular_file"
    details = {r["source_file"]: r["detail"] for r in outcome["result"].rejects.to_pylist()}
    assert "FIFO" in details["pipe.json"] and "socket" in details["sock.json"]
    assert [r["source_file"] for r in outcome["result"].runs.to_pylist()] == [GOOD]


@pytest.mark.parametrize("power_log", ["../outside/passwd", "{outside}/passwd", "link.csv"])
def test_power_log_outside_the_folder_is_refused_unread(raw, power_log):
    folder, outside = raw
    os.symlink(outside / "passwd", folder / "link.csv")
    run = {"run_id": "r1", "run_date_partition": "2026-07-14", "source_file": GOOD,
           "power_log": power_log.format(outside=outside), "num_gpus": 8, "duration_s": 10.0}
    (row,) = measure_runs([run], folder)
    assert row["power_valid"] is False and row["power_invalid_reason"] == "power_log_outside_raw_dir"
    assert SECRET not in row["power_detail"]


def test_power_log_inside_the_folder_is_still_read(raw):
    folder, _ = raw
    (folder / "power").mkdir()
    shutil.copy(SAMPLE_DIR / "vllm" / "h200" / "power" / GOOD.replace(".json", ".nvidia-smi.csv"), folder / "power")
    run = {"run_id": "r1", "run_date_partition": "2026-07-14", "source_file": GOOD, "num_gpus": 8,
           "power_log": "power/" + GOOD.replace(".json", ".nvidia-smi.csv"), "duration_s": 10.0}
    (row,) = measure_runs([run], folder)
    assert row["power_invalid_reason"] != "power_log_outside_raw_dir"
    assert row["power_invalid_reason"] == "no_window"  # read and parsed; this hand-made run gives no window
