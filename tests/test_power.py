"""Power telemetry: parsing each tool's CSV, integration against hand-computed trapezoids, every invalidity reason."""

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from pipeline.metrics.power import (
    EPOCH,
    LOCAL,
    PowerFormatError,
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
