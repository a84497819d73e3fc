"""Regressions found and announced: the detector on hand-made series, the metric rules as data, the
status across runs, the webhook against a real HTTP server on loopback, and the whole pipeline over a nightly
history built from real InferenceX export rows with one injected −15 % step (and the same history without it)."""

import datetime as dt
import io
import json
import threading
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from benchmarks.regressions import evaluate
from pipeline.comparisons.regressions import (
    DetectionSettings,
    MetricRule,
    RegressionRulesError,
    assign_status,
    detect,
    find_changes,
    load_metric_rules,
    Series,
)
from pipeline.io.webhook import WebhookError, post_json

TPUT = MetricRule("line", "tput_per_gpu", "higher", "relative", 0.05, 0.005)
TPOT = MetricRule("line", "median_tpot_s", "lower", "relative", 0.05, 0.005)


def noisy(n: int, cv: float = 0.01, seed: int = 1, level: float = 1000.0) -> np.ndarray:
    return level * np.exp(np.random.default_rng(seed).normal(0.0, cv, n))


# --- the detector -------------------------------------------------------------------------------------------------

def test_a_step_is_found_at_its_night_with_its_size():
    values = noisy(20)
    values[12:] *= 0.85
    [change] = find_changes(values, TPUT)
    assert change.index == 12
    assert change.mean_before == pytest.approx(values[:12].mean())
    assert change.mean_after == pytest.approx(values[12:].mean())
    assert change.magnitude == pytest.approx(values[12:].mean() / values[:12].mean() - 1)
    assert -0.17 < change.magnitude < -0.13 and change.p_value < 1e-6


def test_no_step_no_change_and_small_steps_stay_below_the_minimum_magnitude():
    assert find_changes(noisy(40, seed=2), TPUT) == []
    values = noisy(40, cv=0.002, seed=3)
    values[20:] *= 0.97  # significant against 0.2 % noise, but under the 5 % minimum
    assert find_changes(values, TPUT) == []
    assert len(find_changes(values, TPUT, DetectionSettings(min_magnitude=0.02))) == 1


def test_one_bad_night_is_not_a_regression_two_are():
    # a long quiet history, so one outlier's residual barely moves the pooled noise: only the rule that each of
    # the first two nights after a change look like the new level keeps a single bad night from being one
    values = noisy(40, seed=4)
    values[-1] *= 0.8
    assert find_changes(values, TPUT) == []  # the morning after one bad night: nothing yet
    values = np.append(values, 0.8 * noisy(1, seed=5))
    [change] = find_changes(values, TPUT)
    assert change.index == 39 and change.after == range(39, 41)
    # an outlier night followed by a normal one is not a change either
    values[-1] = 1000.0
    assert find_changes(values, TPUT) == []


def test_the_direction_is_the_metric_s_not_the_sign():
    values = noisy(20, seed=6)
    values[10:] *= 1.2  # TPOT up 20 %: slower
    [tpot] = find_changes(values, TPOT)
    rows = detect([_series("median_tpot_s", values)], {("line", "median_tpot_s"): TPOT})
    assert tpot.magnitude > 0 and [r["direction"] for r in rows] == ["regression"]
    rows = detect([_series("tput_per_gpu", values)], {("line", "tput_per_gpu"): TPUT})
    assert [r["direction"] for r in rows] == ["improvement"]


def test_a_step_undone_later_is_recovered():
    values = noisy(30, seed=7)
    values[10:20] *= 0.8
    rows = detect([_series("tput_per_gpu", values)], {("line", "tput_per_gpu"): TPUT})
    assert [(r["direction"], r["status"], r["first_bad_date"]) for r in rows] == [
        ("regression", "recovered", dt.date(2026, 7, 11)), ("improvement", "new", dt.date(2026, 7, 21))]


def test_repeats_give_the_noise_when_they_show_more_than_the_residuals():
    values = noisy(12, cv=0.001, seed=8)
    values[8:] *= 0.94
    sd, counts = np.full(12, 0.05 * 1000), np.full(12, 3)  # repeats 5 % apart: a 6 % step is within noise
    assert find_changes(values, TPUT) != []
    assert find_changes(values, TPUT, repeat_sd=sd, repeat_n=counts) == []
    [change] = find_changes(values, TPUT, repeat_sd=np.full(12, 0.002 * 1000), repeat_n=counts)
    assert change.noise_source in ("residuals", "floor")


def test_absolute_metric_failure_rate():
    rule = MetricRule("line", "failure_rate", "lower", "absolute", 0.02, 0.002)
    values = np.r_[np.zeros(8), [0.3, 0.35, 0.3]]
    [change] = find_changes(values, rule)
    assert change.index == 8 and change.magnitude == pytest.approx(np.mean([0.3, 0.35, 0.3]))


def _series(metric, values, start=dt.date(2026, 7, 1)):
    dates = [start + dt.timedelta(days=i) for i in range(len(values))]
    return Series("line", "L|conc=8", {"model": "m", "isl": 1024, "osl": 1024, "hw": "h200", "framework": "sglang",
                                       "precision": "fp8", "spec_decoding": "none", "benchmark_type": "fixed_seq",
                                       "line_id": "L", "conc": 8, "price_book": None, "target_intvty": None},
                  metric, dates, [f"date:{d}" for d in dates], list(values), [float("nan")] * len(values),
                  [1] * len(values), [f"https://example.invalid/runs/{i}" for i in range(len(values))])


# --- rules as data --------------------------------------------------------------------------------------------------

def test_the_committed_rules_say_which_way_is_better():
    rules = load_metric_rules()
    assert rules[("line", "tput_per_gpu")].better == "higher"
    assert rules[("line", "median_tpot_s")].better == rules[("line", "p99_ttft_s")].better == "lower"
    assert rules[("frontier", "cost_per_mtok_hyperscaler")].better == "lower"
    assert rules[("line", "failure_rate")].scale == "absolute"


@pytest.mark.parametrize("row, words", [
    ("line,tput_per_gpu,up,relative,0.05,0.005,x", "column better: 'up' is not higher or lower"),
    ("line,tok_s_per_mw,higher,relative,0.05,0.005,x", "column metric: 'tok_s_per_mw' is not a line metric"),
    ("line,tput_per_gpu,higher,relative,-1,0.005,x", "column min_magnitude: '-1' is not a positive"),
])
def test_a_malformed_rule_names_its_line_and_column(tmp_path, row, words):
    path = tmp_path / "regression_metrics.csv"
    path.write_text("series,metric,better,scale,min_magnitude,noise_floor,basis\n" + row + "\n", encoding="utf-8")
    with pytest.raises(RegressionRulesError, match="line 2, " + words.replace("(", r"\(")):
        load_metric_rules(path)


# --- status across runs -----------------------------------------------------------------------------------------------

def test_a_change_found_again_keeps_its_id_and_notification_and_is_ongoing():
    values = noisy(20, seed=9)
    values[12:] *= 0.85
    rules = {("line", "tput_per_gpu"): TPUT}
    first = assign_status(detect([_series("tput_per_gpu", values[:15])], rules), None,
                          dt.datetime(2026, 7, 16, tzinfo=dt.timezone.utc))
    assert first["status"].to_pylist() == ["new"]
    sent = dt.datetime(2026, 7, 16, 2, tzinfo=dt.timezone.utc)
    first = first.set_column(first.schema.get_field_index("notified_at"), "notified_at",
                             __import__("pyarrow").array([sent], first.schema.field("notified_at").type))
    again = assign_status(detect([_series("tput_per_gpu", values)], rules), first,
                          dt.datetime(2026, 7, 21, tzinfo=dt.timezone.utc)).to_pylist()
    assert [(r["status"], r["regression_id"], r["notified_at"]) for r in again] == [
        ("ongoing", first["regression_id"][0].as_py(), sent)]


# --- the webhook ------------------------------------------------------------------------------------------------------

class _Hook(BaseHTTPRequestHandler):
    received: list = []
    status = 200

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.headers["Content-Type"], json.loads(body)))
        self.send_response(type(self).status)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    """A real HTTP server on 127.0.0.1 (a free port) in a thread: (url, handler class with ``received``)."""
    handler = type("Hook", (_Hook,), {"received": [], "status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    server.shutdown()
    server.server_close()


def test_post_json_reaches_the_server_and_a_refusal_raises(webhook):
    url, hook = webhook
    assert post_json(url, {"text": "hello"}) == 200
    assert hook.received == [("application/json", {"text": "hello"})]
    hook.status = 500
    with pytest.raises(WebhookError, match="answered HTTP 500"):
        post_json(url, {"text": "again"})
    with pytest.raises(WebhookError, match="must start with http"):
        post_json("file:///etc/passwd", {})


# --- the whole pipeline on a history of real rows -----------------------------------------------------------------------

EXPORT = "inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"
# four real lines of the export (DeepSeek-R1 1024/1024, SGLang FP8, TP8), five concurrencies each
LINES = [("mi355x", "2026-05-03"), ("mi325x", "2026-02-27"), ("h200", "2026-03-25"), ("mi300x", "2026-02-27")]
STEPPED_HW = "h200"
NIGHTS = [dt.date(2026, 7, 1) + dt.timedelta(days=i) for i in range(10)]
STEP_NIGHT = 6  # NIGHTS[6] = 2026-07-07: the first bad night
THROUGHPUTS = ("tput_per_gpu", "input_tput_per_gpu", "output_tput_per_gpu")


def write_history(real_logs: Path, folder: Path, step: float | None) -> dict:
    """One export file per night holding the chosen lines' real rows, each night a workflow run of its own, every
    throughput multiplied by exp(N(0, 1 %)) run-to-run noise (seeded); with ``step``, the h200 line's throughputs
    are multiplied by (1 + step) from ``STEP_NIGHT`` on. Returns the h200 rows' tok/s/GPU per (night, conc)."""
    rows = json.loads((real_logs / EXPORT).read_text(encoding="utf-8"))
    chosen = [r for r in rows if (r["hardware"], r["date"]) in LINES and r["framework"] == "sglang"
              and r["precision"] == "fp8" and r["isl"] == 1024 and r["osl"] == 1024 and r["decode_tp"] == 8]
    assert len(chosen) == 20
    rng = np.random.default_rng(38)
    folder.mkdir()
    stepped = {}
    for i, night in enumerate(NIGHTS):
        out = []
        for row in chosen:
            copy = json.loads(json.dumps(row))
            copy["date"] = night.isoformat()
            copy["run_url"] = f"https://github.com/SemiAnalysisAI/InferenceX/actions/runs/{9000 + i}/attempts/1"
            factor = float(np.exp(rng.normal(0.0, 0.01)))
            if step is not None and row["hardware"] == STEPPED_HW and i >= STEP_NIGHT:
                factor *= 1 + step
            for key in THROUGHPUTS:
                copy["metrics"][key] *= factor
            if row["hardware"] == STEPPED_HW:
                stepped[(night, row["conc"])] = copy["metrics"]["tput_per_gpu"]
            out.append(copy)
        (folder / f"api_benchmarks_{night}.json").write_text(json.dumps(out), encoding="utf-8")
    return stepped


def _check(run, name):
    return next(e.event_specific_data for e in run.result.all_events
                if e.event_type_value == "ASSET_CHECK_EVALUATION" and e.event_specific_data.check_name == name)


def _cli(*argv) -> str:
    from pipeline.__main__ import main

    buffer = io.StringIO()
    with redirect_stdout(buffer):
        assert main(["regressions", *argv]) == 0
    return buffer.getvalue()


@pytest.mark.long
def test_one_injected_step_on_real_rows_is_found_announced_once_and_shown(real_logs, tmp_path, run_pipeline,
                                                                        webhook, monkeypatch):
    url, hook = webhook
    monkeypatch.setenv("PIPELINE_REGRESSION_WEBHOOK", url)
    stepped = write_history(real_logs, tmp_path / "raw", step=-0.15)
    run = run_pipeline(tmp_path / "raw")
    assert run.result.success
    rows = run.mart("regressions").to_pylist()
    first_bad = NIGHTS[STEP_NIGHT]

    # exactly the stepped line: tok/s/GPU at each of its five concurrencies, dated the step's night
    lines = [r for r in rows if r["series_kind"] == "line"]
    assert sorted((r["hw"], r["conc"], r["metric"], r["direction"], r["first_bad_date"], r["status"]) for r in lines) \
        == [(STEPPED_HW, c, "tput_per_gpu", "regression", first_bad, "new") for c in (4, 8, 16, 32, 64)]
    for r in lines:  # the means are the input's own numbers, averaged by hand
        before = [stepped[(n, r["conc"])] for n in NIGHTS[:STEP_NIGHT]]
        after = [stepped[(n, r["conc"])] for n in NIGHTS[STEP_NIGHT:]]
        assert r["mean_before"] == pytest.approx(np.mean(before), rel=1e-9)
        assert r["mean_after"] == pytest.approx(np.mean(after), rel=1e-9)
        assert -17 < r["magnitude_pct"] < -13
        assert r["last_good_run"].endswith(f"/runs/{9000 + STEP_NIGHT - 1}/attempts/1")
        assert r["first_bad_run"].endswith(f"/runs/{9000 + STEP_NIGHT}/attempts/1")
        assert r["after_sweeps"][0] == f"gha:{9000 + STEP_NIGHT}"
    # the h200 side's frontier (the only line of its group) moves with it; no other group, no other metric
    assert {(r["hw"], r["metric"], r["first_bad_date"]) for r in rows if r["series_kind"] == "frontier"} <= {
        (STEPPED_HW, m, first_bad) for m in ("tput_per_gpu", "cost_per_mtok_hyperscaler", "tok_s_per_mw")}
    assert {r["hw"] for r in rows} == {STEPPED_HW}
    assert all(r["notified_at"] is not None for r in rows if r["direction"] == "regression")

    # the check warns and names each new one
    check = _check(run, "no_new_regressions")
    assert not check.passed and check.severity.value == "WARN"
    table = check.metadata["regressions"].value
    assert table.count("| new |") == sum(r["direction"] == "regression" for r in rows)
    assert f"conc=64 | tok/s/GPU |" in table and str(first_bad) in table and "/runs/9006/attempts/1" in table

    # one webhook message with every new regression in it
    assert len(hook.received) == 1
    content_type, message = hook.received[0]
    assert content_type == "application/json"
    assert message["text"].count("\n•") == sum(r["direction"] == "regression" for r in rows)
    assert f"first bad {first_bad}" in message["text"] and STEPPED_HW in message["text"]

    # the index lists them; the CLI prints them with their numbers
    index = (run.out_dir / "report" / "index.html").read_text(encoding="utf-8")
    assert "id='regressions'" in index and "dsr1|1024/1024|h200|sglang|fp8" in index
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(run.out_dir))
    printed = _cli("--metric", "tput_per_gpu")
    conc64 = next(r for r in lines if r["conc"] == 64)
    assert f"{conc64['mean_before']:,.0f} → {conc64['mean_after']:,.0f} ({conc64['magnitude_pct']:+.1f} %)" in printed
    assert printed.count(f"{first_bad}  new") == sum(r["metric"] == "tput_per_gpu" for r in rows
                                                      if r["direction"] == "regression")
    assert "no open regressions since" in _cli("--since", (first_bad + dt.timedelta(days=1)).isoformat())
    assert "no open regressions" in _cli("--metric", "median_tpot_s")

    # the next run finds the same regressions: ongoing, not announced again, the check passes
    again = run_pipeline(tmp_path / "raw")
    assert again.result.success
    rerun = again.mart("regressions").to_pylist()
    assert sorted((r["regression_id"], r["notified_at"]) for r in rerun) == sorted(
        (r["regression_id"], r["notified_at"]) for r in rows)
    assert {r["status"] for r in rerun} == {"ongoing"}
    assert len(hook.received) == 1
    assert _check(again, "no_new_regressions").passed


def test_the_same_history_without_the_step_flags_nothing(real_logs, tmp_path, run_pipeline, webhook, monkeypatch):
    url, hook = webhook
    monkeypatch.setenv("PIPELINE_REGRESSION_WEBHOOK", url)
    write_history(real_logs, tmp_path / "raw", step=None)
    run = run_pipeline(tmp_path / "raw")
    assert run.result.success
    assert run.mart("regressions").num_rows == 0
    assert pq.read_schema(run.out_dir / "regressions.parquet").names == run.mart("regressions").column_names
    assert _check(run, "no_new_regressions").passed
    assert hook.received == []
    assert "id='regressions'" not in (run.out_dir / "report" / "index.html").read_text(encoding="utf-8")


def test_without_a_webhook_nothing_is_sent_and_the_check_still_names_them(real_logs, tmp_path, run_pipeline,
                                                                         monkeypatch):
    monkeypatch.delenv("PIPELINE_REGRESSION_WEBHOOK", raising=False)
    write_history(real_logs, tmp_path / "raw", step=-0.15)
    run = run_pipeline(tmp_path / "raw")
    rows = run.mart("regressions").to_pylist()
    assert rows and all(r["notified_at"] is None for r in rows)
    assert not _check(run, "no_new_regressions").passed


# --- accuracy, measured (benchmarks/regressions.py; not timed) ---------------------------------------------------------

@pytest.mark.long(1)
def test_accuracy_targets_at_the_measured_noise():
    """At the CV measured on the real history (3 %): ≥ 95 % recall at −10 % and −20 %, ≤ 1 false alarm per 100
    series × 60 nights without a step; the HUD rule (0.8 × the median of 3 nights) misses most −10 % steps."""
    steps = evaluate(series=150, steps=(-0.10, -0.20), seed=2026)
    for step in (-0.10, -0.20):
        out = steps[("changepoint", step)]
        assert out.found / out.series >= 0.95, step
        assert np.median(out.nights) <= 4  # announced within days, not weeks
    hud = steps[("hud", -0.10)]
    assert hud.found / hud.series < 0.5
    none = evaluate(series=400, steps=(0.0,), seed=2027)[("changepoint", 0.0)]
    assert 100 * none.false_alarms / none.series <= 1.0
