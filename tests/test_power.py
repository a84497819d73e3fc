"""Power telemetry: parsing each tool's CSV, integration against hand-computed trapezoids, every invalidity reason."""

import calendar
import datetime as dt
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from pipeline.io.opener import RefusedFile
from pipeline.metrics.power import (
    EPOCH,
    LOCAL,
    PowerFormatError,
    PowerResult,
    PowerSamples,
    integrate_window,
    measure_runs,
    read_power_csv,
    run_window,
)


def _samples(per_gpu: dict[str, list[tuple[float, float]]], clock=EPOCH) -> PowerSamples:
    t, g, w = [], [], []
    for gpu, points in per_gpu.items():
        for ts, watts in points:
            t.append(ts), g.append(gpu), w.append(watts)
    return PowerSamples(np.array(t, float), np.array(g), np.array(w, float), clock, "test")


LINEAR = {"0": [(0, 100), (1, 200), (2, 300), (3, 400), (4, 500)], "1": [(0, 100), (1, 100), (2, 100), (3, 100), (4, 100)]}


def test_trapezoid_by_hand_two_gpus():
    # GPU0 is linear: its mean over [0.5, 3.5] is its value at 2.0 = 300 W -> 900 J; GPU1 100 W -> 300 J
    r = integrate_window(_samples(LINEAR), 0.5, 3.5, EPOCH, expected_gpus=2, duration_s=3.0)
    assert r.valid and r.energy_j == pytest.approx(1200.0)
    assert r.avg_power_w_per_gpu == pytest.approx(1200.0 / 3.0 / 2)
    assert (r.gpus_seen, r.samples_in_window) == (2, 6)


def test_edges_are_linearly_interpolated():
    zigzag = {"0": [(0, 100), (1, 300), (2, 100), (3, 300), (4, 100)]}
    assert integrate_window(_samples(zigzag), 0, 4, EPOCH, expected_gpus=1, duration_s=None).energy_j == 800.0
    # [0.5, 1.5]: 200 W at 0.5, 300 W at 1, 200 W at 1.5 -> 0.5*(200+300)/2 + 0.5*(300+200)/2 = 250 J
    assert integrate_window(_samples(zigzag), 0.5, 1.5, EPOCH, expected_gpus=1, duration_s=1.0).energy_j == 250.0


@pytest.mark.parametrize(
    "samples, start, end, clock, gpus, duration, reason",
    [
        (LINEAR, 3.0, 1.0, EPOCH, 2, None, "bad_window"),
        (LINEAR, 0.5, 3.5, EPOCH, 2, 10.0, "duration_mismatch"),
        ({"0": [(1, 100)]}, 0.5, 3.5, EPOCH, 1, None, "too_few_samples"),
        (LINEAR, 0.5, 6.0, EPOCH, 2, None, "window_not_covered"),
        ({"0": [(0, 100), (0.5, 100), (4.0, 100), (5, 100)]}, 0.2, 4.5, EPOCH, 1, None, "gap_too_long"),
        (LINEAR, 0.5, 3.5, EPOCH, 8, 3.0, "too_few_gpus"),
        (LINEAR, 0.5, 3.5, LOCAL, 2, 3.0, "clock_mismatch"),
    ],
)
def test_invalidity_reasons(samples, start, end, clock, gpus, duration, reason):
    r = integrate_window(_samples(samples), start, end, clock, expected_gpus=gpus, duration_s=duration)
    assert not r.valid and r.reason == reason
    assert r.energy_j is None and r.avg_power_w_per_gpu is None  # never a guess


def test_duration_tolerance_is_half_a_second_or_one_percent():
    ok = integrate_window(_samples(LINEAR), 0.5, 3.5, EPOCH, expected_gpus=2, duration_s=3.45)
    assert ok.valid


def test_nvidia_smi_default_format(tmp_path):
    path = tmp_path / "smi.csv"
    path.write_text("timestamp, index, power.draw [W]\n"
                    "2025/01/15 12:34:56.000, 0, 350.00 W\n2025/01/15 12:34:56.000, 1, [N/A]\n"
                    "2025/01/15 12:34:57.000, 0, 450.00 W\n2025/01/15 12:34:57.000, 1, 100.50 W\n")
    s = read_power_csv(path)
    assert s.clock == LOCAL and s.layout == "nvidia_smi"
    assert list(s.watts) == [350.0, 450.0, 100.5]  # [N/A] dropped, " W" stripped
    t0 = dt.datetime(2025, 1, 15, 12, 34, 56, tzinfo=dt.timezone.utc).timestamp()
    assert s.t[0] == t0 and s.t[1] == t0 + 1


def test_nvidia_smi_nounits_real_file(real_logs):
    s = read_power_csv(real_logs / "power/powertrace_a100_smoke_1784415083_nvidia_smi_power.csv")
    lines = (real_logs / "power/powertrace_a100_smoke_1784415083_nvidia_smi_power.csv").read_text().splitlines()[1:]
    assert s.layout == "nvidia_smi" and len(s.watts) == len(lines)
    assert s.watts[0] == float(lines[0].split(",")[3])
    r = integrate_window(s, s.t[0], s.t[-1], LOCAL, expected_gpus=1, duration_s=None)
    assert r.valid and r.energy_j == pytest.approx(np.trapezoid(s.watts, s.t))


def test_nvidia_smi_noheader(tmp_path):
    path = tmp_path / "smi.csv"
    path.write_text("2025/01/15 12:34:56.000, 0, 350.00 W\n2025/01/15 12:34:57.000, 0, 351.00 W\n")
    assert read_power_csv(path).layout == "nvidia_smi_noheader"


def test_amd_smi_watch_mode_with_repeated_headers(tmp_path):
    path = tmp_path / "amd.csv"
    header = "timestamp,gpu,socket_power,gfx_voltage"
    path.write_text(f"{header}\n1700000000,0,700,N/A\n1700000000,1,N/A,N/A\n{header}\n1700000001,0,710,N/A\n"
                    "1700000001,1,690,N/A\n")
    s = read_power_csv(path)
    assert s.clock == EPOCH and s.layout == "amd_smi"
    assert sorted(zip(s.gpu.tolist(), s.t.tolist(), s.watts.tolist())) == [
        ("0", 1700000000, 700), ("0", 1700000001, 710), ("1", 1700000001, 690)]


def test_only_a_whole_repeated_header_is_skipped(tmp_path):
    """A row that starts like the header but differs in another cell (a logger restarted with other columns) is
    not a repeated header: it is read as a sample, and its timestamp cell is no time (ValueError), so the file is
    refused rather than read past the change."""
    path = tmp_path / "amd.csv"
    path.write_text("timestamp,gpu,socket_power\n1700000000,0,700\ntimestamp,gpu,current_socket_power\n"
                    "1700000001,0,710\n")
    with pytest.raises(ValueError, match="unrecognized timestamp 'timestamp'"):
        read_power_csv(path)


def test_amd_smi_and_rocm_smi_snapshots_have_no_timestamps(tmp_path):
    for text in ("gpu,socket_power,gfx_voltage\n0,700,N/A\n", "device,Average Graphics Package Power (W)\ncard0,301.0\n"):
        path = tmp_path / "snap.csv"
        path.write_text(text)
        with pytest.raises(PowerFormatError) as err:
            read_power_csv(path)
        assert err.value.reason == "no_timestamps"


def test_pynvml_wide_real_file(real_logs):
    s = read_power_csv(real_logs / "power/seongjunpark_pynvml_power_log_wide.csv")
    assert s.layout == "pynvml_wide" and set(s.gpu.tolist()) == {"0", "1"}


def test_run_window_sources():
    end = dt.datetime(2026, 7, 14, 10, 0, 0)
    assert run_window({"duration_s": 60.0, "bench_end_local": end})[2:] == (LOCAL, "local date − duration")
    assert run_window({"duration_s": 60.0, "start_time_unix": 1e9})[:3] == (1e9, 1e9 + 60, EPOCH)
    assert run_window({"bench_start_unix": 5.0, "bench_end_unix": 9.0})[:3] == (5.0, 9.0, EPOCH)
    assert run_window({"duration_s": 60.0}) is None


def test_measure_runs_links_power_log_and_reports_missing(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "p.csv").write_text("timestamp,gpu,socket_power\n" + "".join(
        f"{t},{g},500\n" for t in range(100, 131) for g in range(2)))
    runs = [
        {"run_id": "a", "source_file": "logs/run.json", "power_log": "p.csv", "start_time_unix": 105.0,
         "duration_s": 20.0, "num_gpus": 2},
        {"run_id": "b", "source_file": "logs/run2.json", "power_log": "nope.csv", "num_gpus": 2},
        {"run_id": "c", "source_file": "logs/run3.json", "power_log": "p.csv", "num_gpus": 2},
        {"run_id": "d", "source_file": "x.json", "reported_avg_power_w_per_gpu": 612.0},
        {"run_id": "e", "source_file": "y.json"},
    ]
    out = {r["run_id"]: r for r in measure_runs(runs, tmp_path)}
    assert out["a"]["power_valid"] and out["a"]["avg_power_w_per_gpu"] == pytest.approx(500.0)
    assert out["a"]["energy_j"] == pytest.approx(500.0 * 2 * 20)
    assert out["b"]["power_invalid_reason"] == "power_log_missing"
    assert out["c"]["power_invalid_reason"] == "no_window"
    assert out["d"]["power_source"] == "inferencex:aggregate_power" and out["d"]["avg_power_w_per_gpu"] == 612.0
    assert "e" not in out


@pytest.mark.parametrize("watts, reason", [(-5.0, "implausible_power"), (0.0, "implausible_power"),
                                           (1731.0, "implausible_power"), (1730.0, None), (612.0, None)])
def test_average_power_a_gpu_cannot_draw_is_implausible(watts, reason):
    """Board power of an H200 above its all-in 1.73 kW per GPU (gpu_reference.csv), or not above 0 W, is never
    published: a negative draw gave a tok/s/MW of -97 million, a ×1000 one 84 tok/s/MW (the hostile corpus)."""
    run = {"run_id": "r", "hw": "h200", "reference_power_kw": 1.73, "reported_avg_power_w_per_gpu": watts,
           "reported_energy_j": watts * 8 * 100}
    (row,) = measure_runs([run], Path("."))
    assert row.get("power_invalid_reason") == reason
    assert row["power_valid"] is (reason is None)
    assert (row["avg_power_w_per_gpu"] is None) is (reason is not None)


def test_telemetry_timestamps_read_the_same_on_the_fast_path_as_by_their_formats():
    """nvidia-smi's ``2026/07/14 04:24:35.267`` and the ISO spellings are read by ``datetime.fromisoformat`` when
    every field has its two digits; the value must be the one the format list gives (``strptime``, UTC), and a
    spelling no format reads still fails."""
    import calendar
    import random
    from datetime import datetime, timezone

    from pipeline.metrics.power import _naive_seconds

    assert _naive_seconds("2026/07/14 04:24:35.267") == calendar.timegm((2026, 7, 14, 4, 24, 35)) + 0.267
    formats = {"/ ": "%Y/%m/%d %H:%M:%S", "- ": "%Y-%m-%d %H:%M:%S", "-T": "%Y-%m-%dT%H:%M:%S"}
    rng = random.Random(42)
    for _ in range(2000):
        sep = rng.choice(list(formats))
        fraction = "" if rng.random() < 0.3 else "." + "".join(rng.choice("0123456789")
                                                              for _ in range(rng.randint(1, 6)))
        text = (f"{rng.randint(1990, 2040):04d}{sep[0]}{rng.randint(1, 12):02d}{sep[0]}{rng.randint(1, 28):02d}"
                f"{sep[1]}{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{fraction}")
        fmt = formats[sep] + (".%f" if fraction else "")
        assert _naive_seconds(text) == datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp(), text
    assert _naive_seconds(" 2026/7/4 4:24:35 ") == calendar.timegm((2026, 7, 4, 4, 24, 35))  # one-digit fields
    for bad in ("2026/07/14T04:24:35", "2026-07-14 04:24:35+02:00", "2026-07-14 04:24:35.1234567"):
        with pytest.raises(ValueError, match="unrecognized timestamp"):
            _naive_seconds(bad)


# ---- whole outputs, worked out by hand ----------------------------------------------------------------------------

@pytest.fixture
def local_zone_five_hours_west(monkeypatch):
    """The process's local zone set to UTC−5 (POSIX ``EST5``, no tz database needed): a naive time read as local
    time instead of UTC would land five hours off."""
    monkeypatch.setenv("TZ", "EST5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


T0 = calendar.timegm((2025, 1, 15, 12, 34, 56))  # 2025/01/15 12:34:56 read as UTC


@pytest.mark.parametrize("content, expected, clock, layout", [
    pytest.param(b"timestamp, index, power.draw [W]\n2025/01/15 12:34:56.000, 1, 350.00 W\n"
                 b"2025/01/15 12:34:56.000, 0, 200 W\n2025/01/15 12:34:57.500, 1, 351 W\n",
                 [("0", T0, 200.0), ("1", T0, 350.0), ("1", T0 + 1.5, 351.0)], LOCAL, "nvidia_smi", id="nvidia-smi"),
    pytest.param("\ufefftimestamp, power.draw [W]\n2025/01/15 12:34:57.000, 310 W\n2025/01/15 12:34:56.000, 300 W\n"
                 .encode(), [("0", T0, 300.0), ("0", T0 + 1, 310.0)], LOCAL, "nvidia_smi", id="bom-no-index-column"),
    pytest.param(b'timestamp, name, index, power.draw [W]\n'
                 b'2025/01/15 12:34:56.000, "NVIDIA H100, 80GB", 2, "350.5 W"\n',
                 [("2", T0, 350.5)], LOCAL, "nvidia_smi", id="quoted-after-a-space"),
    pytest.param(b"timestamp, name, index, power.draw [W]\n2025/01/15 12:34:56.000, NVIDIA H100 \xff, 2, 350.5 W\n",
                 [("2", T0, 350.5)], LOCAL, "nvidia_smi", id="undecodable-byte"),
    pytest.param(b"2025/01/15 12:34:56.000, 3, 350.00 W\n", [("3", T0, 350.0)], LOCAL, "nvidia_smi_noheader",
                 id="noheader-one-row"),
    pytest.param(b"timestamp,gpu,average_socket_power\n1700000000,0,700\n , , \n1700000001,0,710\n",
                 [("0", 1700000000.0, 700.0), ("0", 1700000001.0, 710.0)], EPOCH, "amd_smi",
                 id="amd-smi-average-blank-line"),
    pytest.param(b"timestamp,gpu,current_socket_power\n1700000000,1,690\n", [("1", 1700000000.0, 690.0)], EPOCH,
                 "amd_smi", id="amd-smi-current"),
    pytest.param(b"timestamp,device,Current Socket Graphics Package Power (W)\n1700000000,card1,299.5\n"
                 b"1700000000,card0,301.0\n", [("card0", 1700000000.0, 301.0), ("card1", 1700000000.0, 299.5)],
                 EPOCH, "amd_smi", id="rocm-smi-device"),
    pytest.param(b"timestamp_unix,hostname,gpu_index,power_w\n1700000000.5,node2,5,640\n1700000000.5,node1,3,650.5\n"
                 b"1700000001.5,node1,3,660\n",
                 [("node1:3", 1700000000.5, 650.5), ("node1:3", 1700000001.5, 660.0), ("node2:5", 1700000000.5, 640.0)],
                 EPOCH, "inferencex_samples", id="inferencex-samples"),
    pytest.param(b"timestamp,GPU0,GPU1\n100.5,300,310\n101.5,305,N/A\n",
                 [("0", 100.5, 300.0), ("0", 101.5, 305.0), ("1", 100.5, 310.0)], EPOCH, "pynvml_wide",
                 id="pynvml-wide"),
])
def test_read_power_csv_per_layout(tmp_path, local_zone_five_hours_west, content, expected, clock, layout):
    """Each tool's layout gives its samples ordered by GPU then time (naive stamps read as UTC), float64 t and watts."""
    path = tmp_path / "p.csv"
    path.write_bytes(content)
    s = read_power_csv(path)
    assert list(zip(s.gpu.tolist(), s.t.tolist(), s.watts.tolist())) == expected
    assert (s.clock, s.layout, s.t.dtype, s.watts.dtype) == (clock, layout, np.float64, np.float64)


NO_TIMESTAMPS = ("p.csv: power samples without timestamps cannot be placed in a benchmark window "
                 "(use amd-smi watch mode -w)")


@pytest.mark.parametrize("content, reason, detail", [
    ("", "no_samples", "p.csv: empty telemetry file"),
    (" , ,\n\n", "no_samples", "p.csv: empty telemetry file"),
    ("timestamp,gpu,socket_power\n1700000000,0,N/A\n", "no_samples", "p.csv: no readable power values"),
    ("timestamp,gpu,socket_power\n", "no_samples", "p.csv: a header and no samples"),  # logger stopped at once
    ("timestamp, index, power.draw [W]\ntimestamp, index, power.draw [W]\n", "no_samples",
     "p.csv: a header and no samples"),  # the header repeated, as amd-smi's watch mode does
    ("timestamp,GPU0\n100.5,[N/A]\n", "no_samples", "p.csv: no readable power values"),
    ("2025/01/15 12:34:56.000, 0, [N/A]\n", "no_samples", "p.csv: no readable power values"),
    ("a,b,c,d,e,f,g,h,i\n1,2,3,4,5,6,7,8,9\n", "unknown_layout",
     "p.csv: no power column in header ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']"),  # the first eight columns
    ("time, id, watts\n2025/01/15 12:34:56.000, 0, 350\n", "unknown_layout",
     "p.csv: no power column in header ['time', 'id', 'watts']"),  # a header row is not a noheader row
    ("gpu,socket_power\n0,700\n", "no_timestamps", NO_TIMESTAMPS),
    # a row cut short before the last column its layout reads (a logger killed mid-line)
    ("timestamp,gpu,socket_power\n1700000000,0,700\n1700000001,0\n", "unreadable",
     "p.csv: row '1700000001,0' has 2 of the 3 columns its layout reads (a line cut short?)"),
    ("gpu,socket_power,timestamp\n0,700,1700000000\n0,710\n", "unreadable",
     "p.csv: row '0,710' has 2 of the 3 columns its layout reads (a line cut short?)"),
    ("timestamp, power.draw [W], index\n1700000000, 300 W, 0\n1700000001, 310 W\n", "unreadable",
     "p.csv: row '1700000001,310 W' has 2 of the 3 columns its layout reads (a line cut short?)"),
    ("timestamp_unix,gpu_index,power_w,hostname\n1.5,0,600,node1\n2.5,0,610\n", "unreadable",
     "p.csv: row '2.5,0,610' has 3 of the 4 columns its layout reads (a line cut short?)"),
    ("timestamp,GPU0,GPU1,GPU2\n100.5,300,310,320\n101.5,305,315\n", "unreadable",
     "p.csv: row '101.5,305,315' has 3 of the 4 columns its layout reads (a line cut short?)"),
    ("2025/01/15 12:34:56.000, 0, 350 W\n2025/01/15 12:34:57.000, 0\n", "unreadable",
     "p.csv: row '2025/01/15 12:34:57.000,0' has 2 of the 3 columns its layout reads (a line cut short?)"),
    ("device,Current Socket Graphics Package Power (W)\ncard0,301.0\n", "no_timestamps", NO_TIMESTAMPS),
])
def test_read_power_csv_errors_name_the_file(tmp_path, content, reason, detail):
    """A file no layout reads raises PowerFormatError with its reason code and a message naming the file."""
    path = tmp_path / "p.csv"
    path.write_text(content)
    with pytest.raises(PowerFormatError) as err:
        read_power_csv(path)
    assert (err.value.reason, err.value.detail, str(err.value)) == (reason, detail, detail)


def test_read_power_csv_refuses_a_file_outside_its_root(tmp_path):
    """With ``root``, a telemetry file outside it is refused unread (RefusedFile ``outside_raw_dir``)."""
    (tmp_path / "raw").mkdir()
    (tmp_path / "outside.csv").write_text("timestamp,gpu,socket_power\n1700000000,0,700\n")
    with pytest.raises(RefusedFile) as err:
        read_power_csv(tmp_path / "outside.csv", tmp_path / "raw")
    assert (err.value.reason_code, err.value.detail) == (
        "outside_raw_dir", "outside.csv resolves outside its folder: not followed, not read")


def test_naive_timestamps_in_every_format_are_read_as_utc(local_zone_five_hours_west):
    """Every spelling _naive_seconds reads (fast path and each strptime format) gives UTC seconds, whatever the
    machine's zone."""
    from pipeline.metrics.power import _naive_seconds

    at = calendar.timegm((2026, 7, 4, 4, 24, 35))
    for text, expected in [("2026/07/04 04:24:35.500", at + 0.5), ("2026/7/4 4:24:35.5", at + 0.5),
                           ("2026/7/4 4:24:35", at), ("2026-7-4 4:24:35.5", at + 0.5), ("2026-7-4 4:24:35", at),
                           ("2026-7-4T4:24:35.5", at + 0.5), ("2026-7-4T4:24:35", at)]:
        assert _naive_seconds(text) == expected, text


_GPU0 = [(0, 100), (1, 200), (2, 300), (3, 400), (4, 500)]


@pytest.mark.parametrize("samples, start, end, clock, gpus, duration, expected", [
    (LINEAR, 0.5, 3.5, LOCAL, 2, 3.0, PowerResult(
        False, "clock_mismatch", "telemetry clock epoch vs run window clock local_naive: no zone to align them")),
    (LINEAR, 3.0, 1.0, EPOCH, 2, None, PowerResult(False, "bad_window", "window [3.0, 1.0] is empty or reversed")),
    (LINEAR, 2.0, 2.0, EPOCH, 2, None, PowerResult(False, "bad_window", "window [2.0, 2.0] is empty or reversed")),
    (LINEAR, math.nan, 3.0, EPOCH, 2, None, PowerResult(False, "bad_window", "window [nan, 3.0] is empty or reversed")),
    (LINEAR, 0.5, 3.5, EPOCH, 2, 10.0,
     PowerResult(False, "duration_mismatch", "window 3.00 s vs run duration 10.00 s")),
    # 1.0 s off a 4 s run: over max(0.5 s, 1 % = 0.04 s)
    (LINEAR, 0.5, 3.5, EPOCH, 2, 4.0, PowerResult(False, "duration_mismatch", "window 3.00 s vs run duration 4.00 s")),
    ({"0": [(1, 100)]}, 0.5, 3.5, EPOCH, 1, None,
     PowerResult(False, "too_few_samples", "GPU 0: 1 sample(s)", gpus_seen=1)),
    (LINEAR, 0.5, 6.0, EPOCH, 2, None, PowerResult(
        False, "window_not_covered", "GPU 0: samples span [0.00, 4.00], window [0.50, 6.00]", gpus_seen=2)),
    # grid 0.2, 0.5, 4.0, 4.5: the 0.5 -> 4.0 step is 3.5 s
    ({"0": [(0, 100), (0.5, 100), (4.0, 100), (5, 100)]}, 0.2, 4.5, EPOCH, 1, None,
     PowerResult(False, "gap_too_long", "GPU 0: a gap of 3.50 s > 3.0 s", gpus_seen=1)),
    (LINEAR, 0.5, 3.5, EPOCH, 8, 3.0,
     PowerResult(False, "too_few_gpus", "2 GPUs in telemetry, the run used 8", gpus_seen=2)),
    # GPU0 over [0.5, 3.5]: 0.5*(150+200)/2 + 250 + 350 + 0.5*(400+450)/2 = 900 J; GPU1 3 s * 100 W = 300 J;
    # 1200 J / 3 s / 2 GPUs = 200 W; samples strictly inside: t = 1, 2, 3 for each GPU
    (LINEAR, 0.5, 3.5, EPOCH, 2, 3.0, PowerResult(True, None, "2 GPUs, 6 samples inside 3.00 s", 1200.0, 200.0, 2, 6)),
    # |3.0 - 3.5| = 0.5 s, exactly the tolerance: still valid
    (LINEAR, 0.5, 3.5, EPOCH, 2, 3.5, PowerResult(True, None, "2 GPUs, 6 samples inside 3.00 s", 1200.0, 200.0, 2, 6)),
    # a 200 s run may be 1 % = 2 s off: 201.5 s is 1.5 s off; 100 W * 201.5 s; samples inside: t = 1..201
    ({"0": [(t, 100) for t in range(211)]}, 0.0, 201.5, EPOCH, 1, 200.0,
     PowerResult(True, None, "1 GPUs, 201 samples inside 201.50 s", 20150.0, 100.0, 1, 201)),
    # two samples are enough: 150 W at 0.5, 250 W at 1.5 -> (150 + 250) / 2 * 1 s = 200 J
    ({"0": [(0, 100), (2, 300)]}, 0.5, 1.5, EPOCH, 1, 1.0,
     PowerResult(True, None, "1 GPUs, 0 samples inside 1.00 s", 200.0, 200.0, 1, 0)),
    # samples exactly on the edges are edges, not inside: (200 + 300) / 2 * 1 s = 250 J
    ({"0": [(0, 100), (1, 200), (2, 300)]}, 1.0, 2.0, EPOCH, 1, None,
     PowerResult(True, None, "1 GPUs, 0 samples inside 1.00 s", 250.0, 250.0, 1, 0)),
    # a gap of exactly 3 s is allowed: 100 W * 3 s
    ({"0": [(0, 100), (3, 100)]}, 0.0, 3.0, EPOCH, 1, None,
     PowerResult(True, None, "1 GPUs, 0 samples inside 3.00 s", 300.0, 100.0, 1, 0)),
])
def test_integrate_window_whole_results(samples, start, end, clock, gpus, duration, expected):
    """integrate_window gives the whole PowerResult by hand: each reason with its message, or energy and average."""
    assert integrate_window(_samples(samples), start, end, clock, expected_gpus=gpus, duration_s=duration) == expected


def test_run_window_exact_tuples(local_zone_five_hours_west):
    """run_window takes the first source the run gives, in order, with its clock and name; a naive date is UTC."""
    end = calendar.timegm((2026, 7, 14, 10, 0, 0))
    assert run_window({"start_time_unix": 1000.0, "duration_s": 60.0, "bench_start_unix": 1.0,
                       "bench_end_unix": 2.0}) == (1000.0, 1060.0, EPOCH, "start_time_unix + duration")
    assert run_window({"bench_start_unix": 5.0, "bench_end_unix": 9.0, "duration_s": 4.0}) == (
        5.0, 9.0, EPOCH, "client epoch window")
    assert run_window({"bench_end_unix": 1000.0, "duration_s": 60.0}) == (
        940.0, 1000.0, EPOCH, "zoned date − duration")
    assert run_window({"bench_end_local": dt.datetime(2026, 7, 14, 10, 0, 0), "duration_s": 60.0}) == (
        end - 60.0, end, LOCAL, "local date − duration")


def _amd_log(per_gpu_watts: dict[int, float], seconds=range(100, 131)) -> str:
    return "timestamp,gpu,socket_power\n" + "".join(
        f"{t},{g},{w}\n" for t in seconds for g, w in per_gpu_watts.items())


def test_measure_runs_whole_rows(tmp_path):
    """measure_runs gives one whole row per run with power information: measured, each reason it cannot be, reported."""
    raw, logs = tmp_path / "raw", tmp_path / "raw" / "logs"
    logs.mkdir(parents=True)
    (logs / "p.csv").write_text(_amd_log({0: 500, 1: 300}))
    (tmp_path / "outside.csv").write_text(_amd_log({0: 500, 1: 300}))
    (logs / "odd.csv").write_text("a,b\n1,2\n")
    (logs / "bad.csv").write_text("timestamp,gpu,socket_power\nyesterday,0,500\n")
    (logs / "header.csv").write_text("timestamp,gpu,socket_power\n")
    os.mkfifo(logs / "fifo.csv")
    day = "2026-07-14"
    log = {"run_date_partition": day, "source_file": "logs/run.json", "num_gpus": 2}
    runs = [
        {"run_id": "a", **log, "power_log": "p.csv", "start_time_unix": 105.0, "duration_s": 20.0, "hw": "mi300x",
         "reference_power_kw": 2.0},
        {"run_id": "b", **log, "power_log": "nope.csv"},
        {"run_id": "c", **log, "power_log": "../../outside.csv", "start_time_unix": 105.0, "duration_s": 20.0},
        {"run_id": "d", **log, "power_log": "p.csv"},
        {"run_id": "e", **log, "power_log": "p.csv", "bench_start_unix": 110.0, "bench_end_unix": 115.0,
         "duration_s": 5.0, "num_gpus": 8},
        {"run_id": "f", **log, "power_log": "p.csv", "bench_start_unix": 110.0, "bench_end_unix": 115.0,
         "duration_s": 20.0},
        {"run_id": "g", **log, "power_log": "odd.csv", "start_time_unix": 105.0, "duration_s": 20.0},
        {"run_id": "h", **log, "power_log": "bad.csv", "start_time_unix": 105.0, "duration_s": 20.0},
        {"run_id": "i", **log, "power_log": "fifo.csv", "start_time_unix": 105.0, "duration_s": 20.0},
        {"run_id": "o", **log, "power_log": "header.csv", "start_time_unix": 105.0, "duration_s": 20.0},
        {"run_id": "j", "run_date_partition": day, "source_file": "j.json", "hw": "h200", "reference_power_kw": 1.73,
         "reported_avg_power_w_per_gpu": 612.0, "reported_energy_j": 612.0 * 8 * 100},
        {"run_id": "k", "run_date_partition": day, "source_file": "k.json", "hw": "h200", "reference_power_kw": 1.73,
         "reported_avg_power_w_per_gpu": 1731.0, "reported_energy_j": 1731.0 * 8 * 100},
        {"run_id": "l", "run_date_partition": day, "source_file": "l.json", "reported_avg_power_w_per_gpu": -5.0},
        {"run_id": "n", "run_date_partition": day, "source_file": "n.json", "hw": "zz9",
         "reported_avg_power_w_per_gpu": -5.0},
        {"run_id": "m", "run_date_partition": day, "source_file": "m.json", "reported_avg_power_w_per_gpu": 0.5},
        {"run_id": "n", "run_date_partition": day, "source_file": "n.json", "duration_s": 20.0},
    ]

    def invalid(run_id, power_log, reason, detail):
        return {"run_id": run_id, "run_date_partition": day, "power_log": power_log, "power_source": "telemetry",
                "power_valid": False, "power_invalid_reason": reason, "power_detail": detail}

    def windowed(run_id, source, start, end, gpus_seen, samples, valid, reason, detail, energy, watts):
        return {"run_id": run_id, "run_date_partition": day, "power_log": "p.csv", "power_source": "telemetry",
                "window_source": source, "window_clock": "epoch", "window_start": start, "window_end": end,
                "gpus_seen": gpus_seen, "samples_in_window": samples, "power_valid": valid,
                "power_invalid_reason": reason, "power_detail": detail, "energy_j": energy,
                "avg_power_w_per_gpu": watts}

    def reported(run_id, valid, detail, watts, energy, reason=None):
        row = {"run_id": run_id, "run_date_partition": day, "power_log": None,
               "power_source": "inferencex:aggregate_power", "power_valid": valid, "power_detail": detail,
               "avg_power_w_per_gpu": watts, "energy_j": energy}
        return row | ({"power_invalid_reason": reason} if reason else {})

    assert measure_runs(runs, raw) == [
        # [105, 125]: GPU0 500 W * 20 s + GPU1 300 W * 20 s = 16000 J; / 20 s / 2 GPUs = 400 W;
        # samples strictly inside: t = 106..124, 19 per GPU
        windowed("a", "start_time_unix + duration", 105.0, 125.0, 2, 38, True, None,
                 "p.csv (amd_smi): 2 GPUs, 38 samples inside 20.00 s", 16000.0, 400.0),
        invalid("b", "nope.csv", "power_log_missing",
                "power_log 'nope.csv' not found next to the log or in the raw dir"),
        invalid("c", "../../outside.csv", "power_log_outside_raw_dir",
                "power_log '../../outside.csv' resolves outside the raw folder: not read"),
        invalid("d", "p.csv", "no_window",
                "the run gives no start time, end time or duration to place it in the telemetry"),
        windowed("e", "client epoch window", 110.0, 115.0, 2, 0, False, "too_few_gpus",
                 "p.csv (amd_smi): 2 GPUs in telemetry, the run used 8", None, None),
        windowed("f", "client epoch window", 110.0, 115.0, 0, 0, False, "duration_mismatch",
                 "p.csv (amd_smi): window 5.00 s vs run duration 20.00 s", None, None),
        invalid("g", "odd.csv", "unknown_layout", "odd.csv: no power column in header ['a', 'b']"),
        invalid("h", "bad.csv", "unreadable", "power_log 'bad.csv': unrecognized timestamp 'yesterday'"),
        invalid("i", "fifo.csv", "power_log_not_a_regular_file",
                "power_log 'fifo.csv': fifo.csv is a FIFO, not a regular file: not read"),
        invalid("o", "header.csv", "no_samples", "header.csv: a header and no samples"),
        reported("j", True, "power reported by the source (utils/aggregate_power.py)", 612.0, 489600.0),
        # 1.73 kW all-in per H200 = 1730 W
        reported("k", False, "average power 1731 W per GPU is outside (0, 1730] W, the all-in power per h200 GPU of "
                 "gpu_reference.csv: not a GPU's draw", None, None, "implausible_power"),
        reported("l", False, "average power -5 W per GPU is outside (0, ∞) W (gpu_reference.csv gives no all-in power "
                 "per this GPU): not a GPU's draw", None, None, "implausible_power"),
        reported("n", False, "average power -5 W per GPU is outside (0, ∞) W (gpu_reference.csv gives no all-in power "
                 "per zz9 GPU): not a GPU's draw", None, None, "implausible_power"),
        reported("m", True, "power reported by the source (utils/aggregate_power.py)", 0.5, None),  # above 0 W
    ]


def test_power_log_swapped_for_an_outside_link_after_the_check_is_refused(tmp_path, monkeypatch):
    """The read itself is confined to the raw folder: a power_log replaced by a link to an outside file between the
    folder check and the open is refused unread (``power_log_outside_raw_dir``), never parsed."""
    import pipeline.metrics.power as power

    raw, logs = tmp_path / "raw", tmp_path / "raw" / "logs"
    logs.mkdir(parents=True)
    (logs / "p.csv").write_text(_amd_log({0: 500}))
    (tmp_path / "outside.csv").write_text(_amd_log({0: 500}))
    checked = power.inside

    def check_then_swap(path, root):
        verdict = checked(path, root)
        if not (logs / "p.csv").is_symlink():
            (logs / "p.csv").unlink()
            os.symlink(tmp_path / "outside.csv", logs / "p.csv")
        return verdict

    monkeypatch.setattr(power, "inside", check_then_swap)
    run = {"run_id": "r", "source_file": "logs/run.json", "power_log": "p.csv", "start_time_unix": 105.0,
           "duration_s": 20.0, "num_gpus": 1}
    assert measure_runs([run], raw) == [{
        "run_id": "r", "run_date_partition": None, "power_log": "p.csv", "power_source": "telemetry",
        "power_valid": False, "power_invalid_reason": "power_log_outside_raw_dir",
        "power_detail": "power_log 'p.csv': p.csv resolves outside its folder: not followed, not read"}]


def test_plausibility_leaves_an_invalid_measurement_as_it_is():
    """_plausible judges valid measurements only: one already invalid keeps its reason and values untouched."""
    from pipeline.metrics.power import _plausible

    measured = {"power_valid": False, "power_invalid_reason": "gap_too_long", "power_detail": "GPU 0: a gap",
                "avg_power_w_per_gpu": -5.0, "energy_j": -100.0}
    assert _plausible(measured, {"hw": "h200", "reference_power_kw": 1.73}) == measured


def test_an_unopenable_power_log_is_unreadable_without_the_machines_path(tmp_path):
    """A power_log that cannot be opened (a folder) is ``unreadable``, its detail names the power_log as the run
    gives it and holds no path of the machine (details land in marts)."""
    (tmp_path / "logs" / "p.csv").mkdir(parents=True)
    run = {"run_id": "r", "source_file": "logs/run.json", "power_log": "p.csv", "start_time_unix": 105.0,
           "duration_s": 20.0}
    assert measure_runs([run], tmp_path) == [{
        "run_id": "r", "run_date_partition": None, "power_log": "p.csv", "power_source": "telemetry",
        "power_valid": False, "power_invalid_reason": "unreadable",
        "power_detail": "power_log 'p.csv': is a folder, not a file"}]
