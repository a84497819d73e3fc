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


# ---- the files a run log points to follow the run logs' rules ---------------------------------
# Each case is parsed under an alarm: a FIFO opened for reading without O_NONBLOCK waits for a writer forever.

def _ingest_within(folder, seconds=30):
    """``ingest_folder(folder, workers=0)`` in this process, failing the test instead of hanging."""
    import signal

    def hung(*_):
        raise AssertionError(f"the ingest of {folder} blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        return ingest_folder(folder, workers=0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _outside_sidecar(outside):
    """A sidecar outside the raw folder whose values must never reach a row."""
    path = outside / "meta.json"
    path.write_text('{"model": "leaked-model", "image": "%s"}' % SECRET)
    return path


def _assert_nothing_outside_read(result):
    rows = str(result.runs.to_pylist()) + str(result.rejects.to_pylist()) + str(result.files.to_pylist())
    assert SECRET not in rows and "leaked-model" not in rows


def test_sidecar_linked_outside_the_folder_is_refused_unread(raw):
    folder, outside = raw
    os.symlink(_outside_sidecar(outside), folder / (GOOD + ".meta.json"))
    result = _ingest_within(folder)
    reasons = _reasons(result)
    assert reasons[GOOD + ".meta.json"] == "symlink_outside_raw_dir"  # the sidecar's own ledger row
    assert reasons[GOOD] == "invalid_metadata:sidecar"  # and its run: its metadata is not known
    detail = next(r["detail"] for r in result.rejects.to_pylist() if r["source_file"] == GOOD)
    assert "outside" in detail and "not read" in detail
    assert result.runs.num_rows == 0
    _assert_nothing_outside_read(result)


def test_sidecar_linked_to_a_file_inside_the_folder_is_read_and_a_regular_one_beside_it_too(raw):
    """The parse confines a sidecar only when it is a link (``_load_listed_sidecar``): a link to a file inside
    the folder is followed and read; a regular sidecar is read as it lies in the listed folder."""
    folder, _ = raw
    shared = folder / "shared"
    shared.mkdir()
    (shared / "meta.json").write_text('{"image": "vllm/vllm-openai:v0.11.0"}')
    os.symlink(shared / "meta.json", folder / (GOOD + ".meta.json"))
    twin = "dsr1_1k1k_h200_fp8_vllm_none_conc16_copy.json"
    shutil.copy(SAMPLE_DIR / "vllm" / "h200" / GOOD, folder / twin)
    (folder / "runs.csv").write_text((folder / "runs.csv").read_text().replace("escaped.json", twin, 1))
    (folder / (twin + ".meta.json")).write_text('{"image": "vllm/vllm-openai:v0.10.2"}')
    result = _ingest_within(folder)
    images = {r["source_file"]: r["image"] for r in result.runs.to_pylist()}
    assert images == {GOOD: "vllm/vllm-openai:v0.11.0", twin: "vllm/vllm-openai:v0.10.2"}, _reasons(result)


def test_runs_csv_linked_outside_the_folder_is_refused_unread(raw):
    folder, outside = raw
    (folder / "runs.csv").rename(outside / "runs.csv")
    os.symlink(outside / "runs.csv", folder / "runs.csv")
    (outside / "runs.csv").write_text((outside / "runs.csv").read_text().replace("dsr1", "leaked-model"))
    result = _ingest_within(folder)
    reasons = _reasons(result)
    assert reasons["runs.csv"] == "symlink_outside_raw_dir"
    assert reasons[GOOD] == "invalid_metadata:runs.csv"
    assert result.runs.num_rows == 0
    _assert_nothing_outside_read(result)


@pytest.mark.parametrize("name", [GOOD + ".meta.json", "runs.csv"])
def test_fifo_sidecar_or_runs_csv_refuses_its_runs_without_blocking(raw, name):
    folder, _ = raw
    (folder / name).unlink(missing_ok=True)
    os.mkfifo(folder / name)
    result = _ingest_within(folder)
    reasons = _reasons(result)
    assert reasons[name] == "not_a_regular_file"
    key = "sidecar" if name.endswith(".meta.json") else "runs.csv"
    assert reasons[GOOD] == f"invalid_metadata:{key}"
    assert "FIFO" in next(r["detail"] for r in result.rejects.to_pylist() if r["source_file"] == GOOD)


@pytest.mark.parametrize("name", [GOOD + ".meta.json", "runs.csv"])
def test_sidecar_or_runs_csv_linked_to_dev_zero_is_refused(raw, name):
    folder, _ = raw
    (folder / name).unlink(missing_ok=True)
    os.symlink("/dev/zero", folder / name)  # never ends: reading it grows memory without bound
    result = _ingest_within(folder)
    key = "sidecar" if name.endswith(".meta.json") else "runs.csv"
    assert _reasons(result)[GOOD] == f"invalid_metadata:{key}"
    assert result.runs.num_rows == 0


def test_oversized_sidecar_is_refused_unread(raw):
    folder, _ = raw
    from pipeline.io.opener import SIZE_CAPS
    with open(folder / (GOOD + ".meta.json"), "wb") as handle:  # sparse: a cap of bytes, not of disk
        handle.truncate(SIZE_CAPS["sidecar"] + 1)
    result = _ingest_within(folder)
    assert _reasons(result)[GOOD] == "invalid_metadata:sidecar"
    assert "bytes, over the" in next(r["detail"] for r in result.rejects.to_pylist() if r["source_file"] == GOOD)


@pytest.mark.parametrize("kind", ["fifo", "sparse", "dev_zero"])
def test_power_log_that_cannot_be_telemetry_is_refused_unread(raw, kind):
    folder, _ = raw
    target = folder / "power.csv"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev_zero":
        os.symlink("/dev/zero", target)
    else:
        with open(target, "wb") as handle:  # 2 GiB of holes: was read whole, 4.6 GB of memory
            handle.truncate(2 << 30)
    run = {"run_id": "r1", "run_date_partition": "2026-07-14", "source_file": GOOD, "power_log": "power.csv",
           "num_gpus": 8, "duration_s": 10.0}
    (row,) = measure_runs([run], folder)
    expected = {"fifo": "power_log_not_a_regular_file", "sparse": "power_log_too_large",
                "dev_zero": "power_log_outside_raw_dir"}[kind]  # /dev/zero lies outside the folder, too
    assert row["power_valid"] is False and row["power_invalid_reason"] == expected


def test_per_request_records_that_are_a_fifo_are_refused_without_blocking(tmp_path):
    from pipeline.ingest.requests import read_run_requests
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "profile_export_aiperf.json").write_text("{}")
    os.mkfifo(folder / "profile_export.jsonl")
    run = {"source_format": "aiperf", "source_file": "profile_export_aiperf.json", "source_row": 0,
           "completed": 10, "failed": 0}
    source = read_run_requests(folder, run)
    assert source.reason == "refused:per_request" and "FIFO" in source.detail and source.rows == []


def _stat_saying(size):
    """``os.fstat`` as the opener sees it, with the file's size as it was when the writer had written ``size``
    bytes (the file then grew before the read)."""
    real_fstat = os.fstat

    def fstat(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, size,
                               st.st_atime, st.st_mtime, st.st_ctime))
    return fstat


def test_a_file_that_grows_while_read_is_read_to_its_end_within_its_cap(tmp_path, monkeypatch):
    """The opener's growth branch (``read_whole``'s was untested): a run log still being written is read
    to its end, as a buffered read would; one that grows past its kind's cap is refused, never held whole."""
    from pipeline.io import opener

    log = tmp_path / "run.json"
    log.write_bytes(b'{"a": 1, "b": 2}')
    monkeypatch.setattr(opener.os, "fstat", _stat_saying(4))
    assert opener.read_whole(log, "run_log") == (4, b'{"a": 1, "b": 2}')
    sidecar = tmp_path / "run.json.meta.json"
    sidecar.write_bytes(b"x" * (opener.SIZE_CAPS["sidecar"] + 5))
    with pytest.raises(opener.RefusedFile) as refused:
        opener.read_whole(sidecar, "sidecar")
    assert refused.value.reason_code == "too_large" and "grew past" in refused.value.detail
