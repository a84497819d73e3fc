"""GPU power telemetry: read the CSVs that nvidia-smi, amd-smi, rocm-smi, pynvml loggers and DCGM scrapes write,
and integrate energy over a run's benchmark window.

Integration follows InferenceX ``utils/aggregate_power.py``: window [start, end]; per GPU, the trapezoid rule over
the samples inside the window plus linear interpolation at both edges; energy summed over GPUs; average power per
GPU = energy / window length / GPUs. The result is *invalid, with a reason, never guessed* when: the window is
bad (``bad_window``), its length disagrees with the run's duration by more than max(0.5 s, 1 %)
(``duration_mismatch``), a GPU has fewer than 2 samples (``too_few_samples``), the samples do not bracket the
window (``window_not_covered``), two consecutive samples are more than 3 s apart inside it (``gap_too_long``),
fewer GPUs report than the run used (``too_few_gpus``), the file has no timestamps (``no_timestamps``), or the
telemetry clock and the run's clock cannot be compared (``clock_mismatch``: naive local time vs epoch).
"""

from __future__ import annotations

import csv
import functools
import io
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.io.opener import RefusedFile, inside, read_whole

MAX_GAP_S = 3.0
EPOCH, LOCAL = "epoch", "local_naive"


class PowerFormatError(ValueError):
    """A telemetry file none of the known layouts matches; ``reason`` is a stable code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class PowerSamples:
    """Samples of one telemetry file: ``t`` seconds (float64, on ``clock``), ``gpu`` ids (str), ``watts`` (float64).

    ``clock`` is ``epoch`` (Unix seconds) or ``local_naive`` (wall time without a zone, e.g. nvidia-smi's
    ``2025/01/15 12:34:56.789``, read as if UTC so two naive clocks compare). ``layout`` names the source tool.
    """

    t: np.ndarray
    gpu: np.ndarray
    watts: np.ndarray
    clock: str
    layout: str


@dataclass
class PowerResult:
    """Energy over one run's window. Measured values are None when ``valid`` is False (``reason`` says why)."""

    valid: bool
    reason: str | None
    detail: str
    energy_j: float | None = None
    avg_power_w_per_gpu: float | None = None
    gpus_seen: int = 0
    samples_in_window: int = 0


_WATTS = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*W?\s*$")


def _watts(cell: str) -> float:
    match = _WATTS.match(cell)
    return float(match.group(1)) if match else math.nan  # "[N/A]", "N/A", "-" → NaN, dropped later


# The timestamps of _naive_seconds' formats written with two-digit fields (every tool's own output): read by
# datetime.fromisoformat (with '/' as '-'), which gives the datetime strptime gives for them without trying format
# after format (a telemetry file holds a sample per GPU and interval); any other spelling goes through the formats.
_ISO_LIKE = re.compile(r"(?:\d{4}/\d\d/\d\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:\.\d{1,6})?")


def _naive_seconds(text: str) -> float:
    """Seconds since the epoch of a zone-less telemetry timestamp, read as UTC (its clock is reconciled with the
    run's window by ``integrate_window``).

    Raises:
        ValueError: ``text`` is in none of the formats (``unrecognized timestamp``).
    """
    text = text.strip()
    if _ISO_LIKE.fullmatch(text):
        return datetime.fromisoformat(text.replace("/", "-")).replace(tzinfo=timezone.utc).timestamp()
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    raise ValueError(f"unrecognized timestamp {text!r}")


def read_power_csv(path: Path, root: Path | None = None) -> PowerSamples:
    """Samples of a telemetry CSV, whatever tool wrote it, read through ``pipeline.io.opener`` (a regular file of at
    most ``SIZE_CAPS["power_log"]`` bytes, inside ``root`` when given).

    Layouts: nvidia-smi ``--query-gpu=timestamp,index,power.draw --format=csv[,nounits][,noheader]`` (values
    ``612.34 W`` or ``612.34``, ``[N/A]`` skipped); amd-smi ``metric -p --csv`` in watch mode (leading integer
    ``timestamp``, ``gpu``, ``socket_power`` / ``average_socket_power`` / ``current_socket_power``, headers repeated);
    pynvml wide logs (``timestamp`` epoch, one ``GPU<n>`` column per GPU); InferenceX multinode ``samples.csv`` /
    DCGM exports (``timestamp_unix``, ``hostname``, ``gpu_index``, ``power_w``).

    Raises:
        PowerFormatError: ``no_timestamps`` (amd-smi/rocm-smi snapshots without watch mode), ``unknown_layout``,
            ``no_samples`` (an empty file, a header without samples, or no readable power value), or
            ``unreadable`` (a row cut short before a column its layout reads).
        ValueError: a timestamp no known format reads.
        RefusedFile: outside ``root``, not a regular file, or over the cap.
        OSError: the file cannot be opened.
    """
    text = read_whole(path, "power_log", root)[1].decode("utf-8-sig", errors="replace")
    # a row whose cells are all blank is skipped (one join per row, not a generator)
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if row and "".join(row).strip()]
    if not rows:
        raise PowerFormatError("no_samples", f"{path.name}: empty telemetry file")
    header = [c.strip().lower() for c in rows[0]]
    # amd-smi repeats its header: a row that is all of it is skipped (its first cell compared first, the cheap test)
    body = [r for r in rows[1:] if r[0].strip().lower() != header[0] or [c.strip().lower() for c in r] != header]
    t: list[float] = []
    gpu: list[str] = []
    watts: list[float] = []
    # every GPU's sample of an interval repeats its timestamp, and power readings repeat: each text is read once
    # per file (a cache of this call's own; an error is not cached, it is raised again)
    read_watts = functools.cache(_watts)
    naive_seconds = functools.cache(_naive_seconds)

    @functools.cache
    def read_stamp(stamp: str) -> tuple[float, str]:
        """(seconds, clock): epoch seconds (``EPOCH``) or a zone-less date and time (``LOCAL``)."""
        try:
            return float(stamp), EPOCH
        except ValueError:
            return naive_seconds(stamp), LOCAL

    def col(*names: str) -> int | None:
        for name in names:
            for i, h in enumerate(header):
                if h == name or h.startswith(name + " "):
                    return i
        return None

    def complete(r: list[str], need: int) -> list[str]:
        """``r`` when it reaches the last of the ``need`` columns the layout reads (a logger killed mid-line
        leaves a row cut short)."""
        if len(r) < need:
            raise PowerFormatError("unreadable", f"{path.name}: row {','.join(r)!r} has {len(r)} of the {need} "
                                                 "columns its layout reads (a line cut short?)")
        return r

    power_i = col("power.draw", "socket_power", "average_socket_power", "current_socket_power", "power_w",
                  "average graphics package power", "current socket graphics package power")
    if power_i is None and any(re.fullmatch(r"gpu\d+", h) for h in header) and header[0] == "timestamp":
        gpu_cols = [(i, h) for i, h in enumerate(header) if re.fullmatch(r"gpu\d+", h)]
        for r in body:
            complete(r, gpu_cols[-1][0] + 1)
            for i, name in gpu_cols:
                t.append(float(r[0]))
                gpu.append(name[3:])
                watts.append(read_watts(r[i]))
        return _samples(t, gpu, watts, EPOCH, "pynvml_wide", path)
    if power_i is None and re.match(r"\d{4}/\d\d/\d\d ", rows[0][0]) and len(rows[0]) >= 3:
        # nvidia-smi ,noheader: timestamp, index, power.draw
        for r in rows:
            complete(r, 3)
            t.append(naive_seconds(r[0]))
            gpu.append(r[1].strip())
            watts.append(read_watts(r[2]))
        return _samples(t, gpu, watts, LOCAL, "nvidia_smi_noheader", path)
    if power_i is None:
        raise PowerFormatError("unknown_layout", f"{path.name}: no power column in header {header[:8]}")
    ts_i = col("timestamp_unix", "timestamp")
    if ts_i is None:
        raise PowerFormatError("no_timestamps", f"{path.name}: power samples without timestamps cannot be "
                                                "placed in a benchmark window (use amd-smi watch mode -w)")
    gpu_i = col("index", "gpu_index", "gpu", "device")
    host_i = col("hostname")
    if not body:  # a logger stopped before its first sample: a header, maybe repeated, and nothing else
        raise PowerFormatError("no_samples", f"{path.name}: a header and no samples")
    layout = "nvidia_smi" if header[power_i].startswith("power.draw") else (
        "inferencex_samples" if header[power_i] == "power_w" else "amd_smi")
    need = 1 + max(i for i in (ts_i, power_i, gpu_i, host_i) if i is not None)
    for r in body:
        seconds, clock = read_stamp(complete(r, need)[ts_i].strip())
        t.append(seconds)
        gpu_id = r[gpu_i].strip() if gpu_i is not None else "0"
        gpu.append(f"{r[host_i].strip()}:{gpu_id}" if host_i is not None else gpu_id)
        watts.append(read_watts(r[power_i]))
    return _samples(t, gpu, watts, clock, layout, path)


def _samples(t: list, gpu: list, watts: list, clock: str, layout: str, path: Path) -> PowerSamples:
    w = np.asarray(watts, dtype=float)
    keep = np.isfinite(w)
    if not keep.any():
        raise PowerFormatError("no_samples", f"{path.name}: no readable power values")
    order = np.lexsort((np.asarray(t)[keep], np.asarray(gpu)[keep]))
    return PowerSamples(np.asarray(t, dtype=float)[keep][order], np.asarray(gpu)[keep][order], w[keep][order],
                        clock, layout)


def integrate_window(samples: PowerSamples, start: float, end: float, window_clock: str, *,
                     expected_gpus: int | None, duration_s: float | None) -> PowerResult:
    """Energy of every GPU over [start, end] (seconds on ``window_clock``), with the validity rules above.

    Returns:
        PowerResult: ``energy_j`` (J, all GPUs), ``avg_power_w_per_gpu`` (W) when valid.
    """
    if samples.clock != window_clock:
        return PowerResult(False, "clock_mismatch",
                           f"telemetry clock {samples.clock} vs run window clock {window_clock}: no zone to align them")
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return PowerResult(False, "bad_window", f"window [{start}, {end}] is empty or reversed")
    length = end - start
    if duration_s and abs(length - duration_s) > max(0.5, 0.01 * duration_s):
        return PowerResult(False, "duration_mismatch", f"window {length:.2f} s vs run duration {duration_s:.2f} s")
    total_energy, in_window = 0.0, 0
    gpus = np.unique(samples.gpu)
    for g in gpus:
        mask = samples.gpu == g
        t, w = samples.t[mask], samples.watts[mask]
        if t.size < 2:
            return PowerResult(False, "too_few_samples", f"GPU {g}: {t.size} sample(s)", gpus_seen=len(gpus))
        if t[0] > start or t[-1] < end:
            return PowerResult(False, "window_not_covered",
                               f"GPU {g}: samples span [{t[0]:.2f}, {t[-1]:.2f}], window [{start:.2f}, {end:.2f}]",
                               gpus_seen=len(gpus))
        inside = (t > start) & (t < end)
        grid = np.concatenate(([start], t[inside], [end]))
        if np.diff(grid).max() > MAX_GAP_S:
            return PowerResult(False, "gap_too_long", f"GPU {g}: a gap of {np.diff(grid).max():.2f} s > {MAX_GAP_S} s",
                               gpus_seen=len(gpus))
        values = np.interp(grid, t, w)
        total_energy += float(np.trapezoid(values, grid))
        in_window += int(inside.sum())
    if expected_gpus and len(gpus) < expected_gpus:
        return PowerResult(False, "too_few_gpus", f"{len(gpus)} GPUs in telemetry, the run used {expected_gpus}",
                           gpus_seen=len(gpus))
    return PowerResult(True, None, f"{len(gpus)} GPUs, {in_window} samples inside {length:.2f} s",
                       energy_j=total_energy, avg_power_w_per_gpu=total_energy / length / len(gpus),
                       gpus_seen=len(gpus), samples_in_window=in_window)


POWER_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("run_date_partition", pa.string()), ("power_log", pa.string()),
    ("power_source", pa.string()), ("window_source", pa.string()), ("window_clock", pa.string()),
    ("window_start", pa.float64()), ("window_end", pa.float64()), ("gpus_seen", pa.int32()),
    ("samples_in_window", pa.int32()), ("power_valid", pa.bool_()), ("power_invalid_reason", pa.string()),
    ("power_detail", pa.string()), ("energy_j", pa.float64()), ("avg_power_w_per_gpu", pa.float64()),
])


def run_window(run: dict) -> tuple[float, float, str, str] | None:
    """A run's benchmark window (start, end, clock, source), or None when the run gives none.

    Order: the ``start_time_unix`` metadata key + duration (epoch); the client's own epoch window
    (InferenceX ``benchmark_start/end_time_unix``); [end − duration, end] with end from vLLM's ``date`` (taken after
    the run, second resolution): an instant when the date names its zone (ISO 8601 with ``Z`` or an offset), else
    the machine's local clock (``local_naive``).
    """
    duration = run.get("duration_s")
    if run.get("start_time_unix") is not None and duration:
        return run["start_time_unix"], run["start_time_unix"] + duration, EPOCH, "start_time_unix + duration"
    if run.get("bench_start_unix") is not None and run.get("bench_end_unix") is not None:
        return run["bench_start_unix"], run["bench_end_unix"], EPOCH, "client epoch window"
    if run.get("bench_end_unix") is not None and duration:
        return run["bench_end_unix"] - duration, run["bench_end_unix"], EPOCH, "zoned date − duration"
    if run.get("bench_end_local") is not None and duration:
        end = run["bench_end_local"].replace(tzinfo=timezone.utc).timestamp()
        return end - duration, end, LOCAL, "local date − duration"
    return None


def measure_runs(runs: list[dict], raw_dir: Path) -> list[dict]:
    """Measured power for every run that links telemetry (``power_log``) or carries InferenceX power fields.

    Args:
        runs: validated runs with ``num_gpus`` (rows of ``validated_runs`` joined to ``run_gpu_counts``) and
            ``reference_power_kw`` (``gpu_reference.power_kw`` of the run's GPU, kW; None when unknown).
        raw_dir: ``power_log`` is resolved against the log's own folder first, then the raw dir.
    Returns:
        Rows with the ``POWER_SCHEMA`` columns, one per run that has any power information.
    """
    cache: dict[Path, PowerSamples | PowerFormatError] = {}
    out = []
    for run in runs:
        base = {"run_id": run["run_id"], "run_date_partition": run.get("run_date_partition"),
                "power_log": run.get("power_log")}
        if run.get("power_log"):
            measured = _measure_from_log(run, raw_dir, cache)
            out.append({**base, "power_source": "telemetry", **_plausible(measured, run)})
        elif run.get("reported_avg_power_w_per_gpu") is not None:
            reported = {"power_valid": True, "power_detail": "power reported by the source (utils/aggregate_power.py)",
                        "avg_power_w_per_gpu": run["reported_avg_power_w_per_gpu"],
                        "energy_j": run.get("reported_energy_j")}
            out.append({**base, "power_source": "inferencex:aggregate_power", **_plausible(reported, run)})
    return out


def _plausible(measured: dict, run: dict) -> dict:
    """``measured`` unless its average power per GPU cannot be a GPU's: not above 0 W, or above the GPU's all-in
    power per GPU in ``gpu_reference.csv`` (``reference_power_kw`` of the run; board, host share, network and
    cooling together, so no board draws more). Such a value is ``implausible_power`` with the measured columns
    null, never a tok/s/MW (a negative draw gave one of -97 million)."""
    watts, ceiling_kw = measured.get("avg_power_w_per_gpu"), run.get("reference_power_kw")
    if not measured.get("power_valid") or watts is None:
        return measured
    if math.isfinite(watts) and watts > 0 and (ceiling_kw is None or watts <= ceiling_kw * 1000):
        return measured
    bound = f"(0, {ceiling_kw * 1000:g}] W, the all-in power per {run.get('hw')} GPU of gpu_reference.csv" \
        if ceiling_kw is not None else \
        f"(0, ∞) W (gpu_reference.csv gives no all-in power per {run.get('hw') or 'this'} GPU)"
    return {**measured, "power_valid": False, "power_invalid_reason": "implausible_power",
            "power_detail": f"average power {watts:.6g} W per GPU is outside {bound}: not a GPU's draw",
            "energy_j": None, "avg_power_w_per_gpu": None}


def _measure_from_log(run: dict, raw_dir: Path, cache: dict) -> dict:
    log_dir = (raw_dir / run["source_file"]).parent
    candidates = [log_dir / run["power_log"], raw_dir / run["power_log"]]
    found = [p for p in candidates if os.path.lexists(p)]
    # telemetry is read only from inside the raw folder (after symlinks and '..' are resolved): a power_log that
    # points elsewhere is refused unread, so no outside file's text can reach a mart
    path = next((p for p in found if inside(p, raw_dir)), None)
    if path is None and found:
        return _invalid("power_log_outside_raw_dir",
                        f"power_log {run['power_log']!r} resolves outside the raw folder: not read")
    if path is None:
        return _invalid("power_log_missing", f"power_log {run['power_log']!r} not found next to the log or in the raw dir")
    if path not in cache:
        try:
            cache[path] = read_power_csv(path, raw_dir)
        except RefusedFile as exc:  # a FIFO, a device, a sparse or runaway file: refused before a byte is read
            cache[path] = PowerFormatError(f"power_log_{exc.reason_code}", f"power_log {run['power_log']!r}: {exc.detail}")
        except PowerFormatError as exc:
            cache[path] = exc
        except (ValueError, OSError) as exc:  # a stamp no format reads; a folder, or a file it may not open
            # an OSError's text ends with the machine's path to the file: only its own words reach the mart
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            cache[path] = PowerFormatError("unreadable", f"power_log {run['power_log']!r}: {why}")
    samples = cache[path]
    if isinstance(samples, PowerFormatError):
        return _invalid(samples.reason, samples.detail)
    window = run_window(run)
    if window is None:
        return _invalid("no_window", "the run gives no start time, end time or duration to place it in the telemetry")
    start, end, clock, source = window
    result = integrate_window(samples, start, end, clock, expected_gpus=run.get("num_gpus"),
                              duration_s=run.get("duration_s"))
    return {"window_source": source, "window_clock": clock, "window_start": start, "window_end": end,
            "gpus_seen": result.gpus_seen, "samples_in_window": result.samples_in_window,
            "power_valid": result.valid, "power_invalid_reason": result.reason,
            "power_detail": f"{path.name} ({samples.layout}): {result.detail}",
            "energy_j": result.energy_j, "avg_power_w_per_gpu": result.avg_power_w_per_gpu}


def _invalid(reason: str, detail: str) -> dict:
    return {"power_valid": False, "power_invalid_reason": reason, "power_detail": detail}
