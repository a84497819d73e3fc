"""The command line: `compare` prints the same numbers as the comparisons mart; every value it does not know is
answered with the valid ones and the closest; aliases, --list, --json/--csv, --tier and clamped cells."""

import csv
import io
import json
import re

import pytest
from conftest import OTHER_BOOK, SAMPLE_DIR, unrestricted

from pipeline.__main__ import build_parser, main

MI355X = ["--model", "dsr1", "--isl", "1024", "--osl", "1024"]


@pytest.fixture
def sample_marts(sample_run):
    """The session's sample run (``conftest.sample_run``): the CLI only reads its marts."""
    return sample_run


def _mart_rows(run, title="MI355X FP4: MTP vs Off", book="inferencex-seed"):
    return [r for r in unrestricted(run.mart("comparisons")).to_pylist() if r["title"] == title and r["price_book"] == book]


def test_compare_matches_the_mart(sample_marts, capsys):
    rows = _mart_rows(sample_marts)
    targets = sorted({r["target_intvty"] for r in rows})
    code = main(["compare", *MI355X, "--a", "hw=mi355x,precision=fp4,spec_decoding=mtp",
                 "--b", "hw=mi355x,precision=fp4,spec_decoding=none", "--targets", *map(str, targets)])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("MI355X FP4: MTP vs Off")
    for r in rows:
        assert f"{r['tput_per_gpu']:>10.1f}" in out and f"{r['cost_per_mtok_hyperscaler']:>10.3f}" in out
        assert r["cost_sentence"] in out


def test_json_parses_and_equals_the_mart_with_aliases(sample_marts, capsys):
    """nvfp4 and off are the ingest aliases of fp4 and none; the JSON rows are the mart's rows, column for column."""
    rows = _mart_rows(sample_marts)
    targets = sorted({r["target_intvty"] for r in rows})
    code = main(["compare", *MI355X, "--a", "hw=MI355X,precision=nvfp4,spec=mtp",
                 "--b", "hw=mi355,precision=mxfp4,spec=off", "--targets", *map(str, targets), "--json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 0 and len(got) == len(rows) == 6
    key = lambda r: (r["target_index"], r["side"])  # noqa: E731
    for mine, mart in zip(sorted(got, key=key), sorted(rows, key=key)):
        assert mine == {k: v for k, v in mart.items()}


def test_csv_has_the_mart_columns(sample_marts, capsys):
    code = main(["compare", *MI355X, "--a", "hw=mi355x,precision=fp4,spec=mtp", "--b",
                 "hw=mi355x,precision=fp4,spec=none", "--csv"])
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    mart = unrestricted(sample_marts.mart("comparisons"))
    assert code == 0 and list(rows[0]) == mart.column_names and len(rows) == 6
    assert {r["side_label"] for r in rows} == {"MTP", "Off"}


@pytest.mark.parametrize("side, expected", [
    ("hw=h300,precision=fp4", "unknown hw 'h300' for side a at dsr1 1024/1024; valid: b200, gb200, h200, mi355x; "
                              "did you mean h200?"),
    ("hw=mi355x,precision=fp88", "unknown precision 'fp88' for side a at dsr1 1024/1024 hw=mi355x; valid: fp4, fp8; "
                                 "did you mean fp8?"),
    ("hw=h100,precision=fp8", "no runs with hw 'h100' for side a at dsr1 1024/1024; valid: b200, gb200, h200, "
                              "mi355x; did you mean h200?"),
    ("hw=mi355x,precision=fp4,spex=mtp", "unknown side key 'spex' in 'hw=mi355x,precision=fp4,spex=mtp'; valid: hw, "
                                         "precision, spec_decoding, framework; did you mean spec_decoding?"),
    ("hw=mi355x", "side a needs hw= and precision="),
])
def test_unknown_values_are_answered_with_the_valid_ones(sample_marts, capsys, side, expected):
    code = main(["compare", *MI355X, "--a", side, "--b", "hw=mi355x,precision=fp4"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith(expected) and err.count("\n") == 1


@pytest.mark.parametrize("args, expected", [
    (["--model", "dsr2", "--isl", "1024", "--osl", "1024"], "unknown model 'dsr2'; valid: dsr1, qwen3.5-397b-a17b; "
                                                          "did you mean dsr1?"),
    (["--model", "dsr1", "--isl", "1024", "--osl", "8192"], "unknown ISL/OSL '1024/8192' for model dsr1; valid: "
                                                          "1024/1024"),
    ([*MI355X, "--price-book", "seed"], "unknown price book 'seed'; valid: inferencex-seed"),
])
def test_unknown_model_lengths_and_price_book(sample_marts, capsys, args, expected):
    code = main(["compare", *args, "--a", "hw=mi355x,precision=fp4,spec=mtp", "--b", "hw=mi355x,precision=fp4"])
    assert code == 1 and capsys.readouterr().err.startswith(expected)


def test_same_side_twice_is_refused(sample_marts, capsys):
    """off is none after the alias, so these are one side: refused in one line rather than compared with itself."""
    code = main(["compare", *MI355X, "--a", "hw=mi355x,precision=fp4,spec=off", "--b",
                 "hw=mi355x,precision=fp4,spec_decoding=none"])
    err = capsys.readouterr().err
    assert code == 1 and err == ("side a and side b are the same side (dsr1|1024/1024|mi355x|fp4|spec=none|"
                                 "framework=all): change at least one of hw, precision, spec_decoding, framework\n")


def test_clamped_targets_are_marked(sample_marts, capsys):
    """5 and 300 tok/s/user lie outside both frontiers: their rows carry target_clamped, and the table marks them *
    with the note under each cell, and says on stderr that they are outside the band."""
    code = main(["compare", *MI355X, "--a", "hw=mi355x,precision=fp4,spec=mtp", "--b", "hw=mi355x,precision=fp4,spec=off",
                 "--targets", "5", "55", "300", "--json"])
    rows = json.loads(capsys.readouterr().out)
    clamped = {r["target_intvty"] for r in rows if r["target_clamped"]}
    assert code == 0 and clamped == {5.0, 300.0}
    code = main(["compare", *MI355X, "--a", "hw=mi355x,precision=fp4,spec=mtp", "--b", "hw=mi355x,precision=fp4,spec=off",
                 "--targets", "5", "55", "300"])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    marked = [line for line in lines if line[:9].strip().endswith("*")]
    assert [line.split()[0] for line in marked] == ["5*", "5*", "300*", "300*"]
    assert not any(line.split()[0] == "55*" for line in lines)
    assert sum(line.strip().startswith("not measured at the target:") for line in lines) == 4
    assert lines[-1].startswith("* target outside the side's frontier")
    assert "target 5 tok/s/user is outside the band" in captured.err
    assert "target 300 tok/s/user is outside the band" in captured.err


def test_list_counts_runs_once_per_run_not_per_price_book(sample_run_two_books, capsys):
    """A second price book doubles the runs mart's rows, not --list's counts, nor the run summary's."""
    run = sample_run_two_books
    runs = run.mart("runs").to_pylist()
    books = {r["price_book"] for r in runs}
    distinct = {r["run_id"] for r in runs}
    assert books == {"inferencex-seed", OTHER_BOOK} and len(runs) == 2 * len(distinct)
    assert main(["compare", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sum(r["runs"] for r in listed) == len(distinct)
    expected = {}
    for r in runs:
        if r["price_book"] == "inferencex-seed":
            key = (r["model"], r["isl"], r["osl"], r["hw"], r["precision"], r["spec_decoding"], r["framework"])
            expected[key] = expected.get(key, 0) + 1
    assert {tuple(r[k] for k in ("model", "isl", "osl", "hw", "precision", "spec_decoding", "framework")): r["runs"]
            for r in listed} == expected
    assert main(["compare", "--list", "--price-book", OTHER_BOOK]) == 0
    assert f"price books: inferencex-seed, {OTHER_BOOK}" in capsys.readouterr().out

    from pipeline.__main__ import summary
    text = summary(run.out_dir, SAMPLE_DIR)
    assert f"runs accepted:   {len(distinct)} ({len(runs)} rows in runs/" in text


def test_tier_changes_the_cost_column(sample_marts, capsys):
    rows = _mart_rows(sample_marts)
    targets = sorted({r["target_intvty"] for r in rows})
    code = main(["compare", *MI355X, "--a", "hw=mi355x,precision=fp4,spec=mtp", "--b", "hw=mi355x,precision=fp4,spec=off",
                 "--tier", "rental", "--targets", *map(str, targets)])
    out = capsys.readouterr().out
    assert code == 0 and "$/M tok at rental prices" in out
    for r in rows:
        assert f"{r['cost_per_mtok_rental']:>10.3f}" in out
    a = {r["target_index"]: r for r in rows if r["side"] == "a"}
    b = {r["target_index"]: r for r in rows if r["side"] == "b"}
    for i in a:
        ratio = max(a[i]["cost_per_mtok_rental"], b[i]["cost_per_mtok_rental"]) / min(
            a[i]["cost_per_mtok_rental"], b[i]["cost_per_mtok_rental"])
        cheaper = "MTP" if a[i]["cost_per_mtok_rental"] < b[i]["cost_per_mtok_rental"] else "Off"
        assert f"{cheaper} is {int((ratio - 1) * 100 + 0.5)}% cheaper per token at rental prices" in out


def test_every_command_and_option_has_help():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    helps = {c.dest: c.help for c in subparsers._choices_actions}
    assert set(helps) == {"run", "compare", "report", "regressions", "overlay", "partitions", "docs",
                          "sample"} and all(helps.values())
    for name, sub in subparsers.choices.items():
        assert sub.description, name
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings}"


def test_missing_mart_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "nothing"))
    assert main(["compare", "--list"]) == 1
    assert "run `python -m pipeline run` first" in capsys.readouterr().err


@pytest.fixture
def marts_with_agentic(sample_run, tmp_path, monkeypatch):
    """A runs mart holding the sample's fixed-sequence runs plus agentic-trace runs (``benchmark_type`` =
    agentic_traces, ISL/OSL null) of a model only they have: three on one side, two on another (the side keys
    and numbers of sample runs, new run ids)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = sample_run.mart("runs")
    seed = [r for r in runs.to_pylist() if r["price_book"] == "inferencex-seed"]
    by_hw = {}
    for r in seed:
        by_hw.setdefault(r["hw"], []).append(r)
    hw_a, hw_b = sorted(by_hw)[:2]
    agentic = [{**r, "run_id": f"agentic-{hw}-{i}", "model": "qwen3.5", "benchmark_type": "agentic_traces",
                "isl": None, "osl": None, "precision": "fp8", "spec_decoding": "none", "framework": "sglang"}
               for hw, n in ((hw_a, 3), (hw_b, 2)) for i, r in enumerate(by_hw[hw][:n])]
    out = tmp_path / "marts"
    (out / "runs").mkdir(parents=True)
    pq.write_table(pa.concat_tables([runs, pa.Table.from_pylist(agentic, schema=runs.schema)]),
                   out / "runs" / "part-0.parquet")
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(out))
    return seed, (hw_a, hw_b)


def test_list_shows_agentic_trace_sides(marts_with_agentic, capsys):
    seed, (hw_a, hw_b) = marts_with_agentic
    assert main(["compare", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    agentic = [r for r in listed if r["benchmark_type"] == "agentic_traces"]
    assert [(r["model"], r["isl"], r["osl"], r["hw"], r["precision"], r["framework"], r["runs"]) for r in agentic] == [
        ("qwen3.5", None, None, hw_a, "fp8", "sglang", 3), ("qwen3.5", None, None, hw_b, "fp8", "sglang", 2)]
    fixed = [r for r in listed if r["benchmark_type"] == "fixed_seq"]
    assert sum(r["runs"] for r in fixed) == len({r["run_id"] for r in seed})
    assert all(r["isl"] is not None for r in fixed)

    assert main(["compare", "--list", "--model", "qwen3.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    sides = [line.split() for line in lines[1:] if line.startswith("qwen3.5")]
    assert sides == [["qwen3.5", "agentic_traces", "—", "—", hw_a, "fp8", "none", "sglang", "3"],
                     ["qwen3.5", "agentic_traces", "—", "—", hw_b, "fp8", "none", "sglang", "2"]]
    assert not any(line.startswith("dsr1") for line in lines)
    assert "5 runs (counted once each" in "\n".join(lines)
    assert "agentic_traces sides have no ISL/OSL" in "\n".join(lines)

    assert main(["compare", "--list", "--csv", "--model", "qwen3.5"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["benchmark_type"], r["isl"], r["osl"], r["runs"]) for r in rows] == [
        ("agentic_traces", "", "", "3"), ("agentic_traces", "", "", "2")]

    # an ISL/OSL filter leaves the agentic sides out; a comparison of them is refused with where to find it
    assert main(["compare", "--list", "--json", "--isl", "1024", "--osl", "1024"]) == 0
    assert all(r["benchmark_type"] == "fixed_seq" for r in json.loads(capsys.readouterr().out))
    assert main(["compare", "--model", "qwen3.5", "--a", f"hw={hw_a},precision=fp8", "--b",
                 f"hw={hw_b},precision=fp8"]) == 1
    assert "has agentic_traces runs only" in capsys.readouterr().err


def test_list_into_a_reader_that_stops_early_is_not_an_error(sample_marts):
    """``compare --list | head``: the reader closes the pipe before the list is written (head after its lines);
    the command ends quietly, exit 0, not with a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "compare", "--list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=os.environ.copy())
    proc.stdout.close()  # before the child has imported anything, so its first write meets a closed pipe
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and "Traceback" not in stderr and "BrokenPipeError" not in stderr


def test_report_without_a_materialized_pipeline_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "empty.duckdb"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert main(["report"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("report failed (") and "python -m pipeline run" in err[0]
    assert "comparisons" in err[0]  # the cause: DuckDB's own words about the missing table


# --- CSV a spreadsheet opens as typed --------------------------------------------------------------------------

FORMULA_STARTS = "=+-@\t\r"
# sample keys replaced by text a spreadsheet would run as a formula
AS_FORMULAS = {"dsr1": "=dsr1", "sglang": "@sglang", "trtllm": "+trtllm", "vllm": "-vllm", "h200": "\th200",
               "b200": "\rb200"}


@pytest.fixture
def marts_with_formulas(sample_run, tmp_path, monkeypatch):
    """A runs mart of the sample's runs whose model, framework and GPU keys start with =, @, +, -, tab or CR."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    runs = sample_run.mart("runs")
    rows = [{**r, **{k: AS_FORMULAS.get(r[k], r[k]) for k in ("model", "framework", "hw")}} for r in runs.to_pylist()]
    out = tmp_path / "marts"
    (out / "runs").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=runs.schema), out / "runs" / "part-0.parquet")
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(out))


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def test_csv_cells_never_start_a_formula(marts_with_formulas, capsys):
    """`compare --csv` and `compare --list --csv`: a text cell starting with =, +, -, @, tab or CR is written
    with a leading apostrophe (the report page's rule); numbers, negative ones too, are written as they are."""
    assert main(["compare", "--model", "=dsr1", *MI355X[2:], "--a", "hw=mi355x,precision=fp4,spec=mtp",
                 "--b", "hw=mi355x,precision=fp4,spec=none", "--csv"]) == 0
    compared = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    assert main(["compare", "--list", "--csv"]) == 0
    listed = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    assert len(compared) == 6 and {r["model"] for r in compared} == {"'=dsr1"}
    assert all(r["side_id"].startswith("'=dsr1|") for r in compared)
    assert {"'=dsr1"} <= {r["model"] for r in listed}
    assert {"'@sglang", "'+trtllm", "'-vllm"} <= {r["framework"] for r in listed}
    assert {"'\th200", "'\rb200", "mi355x"} <= {r["hw"] for r in listed}
    for row in compared + listed:
        for column, cell in row.items():
            assert not cell.startswith(tuple(FORMULA_STARTS)) or _is_number(cell), (column, cell)


def test_the_cli_and_the_report_page_escape_csv_by_one_rule():
    """The report pages' CSV downloads (frontier-rules.js, csvField, which the comparison pages and the explorer
    load) and the CLI prefix the same first characters."""
    from pipeline.cli.compare import FORMULA_STARTS as cli_starts
    from pipeline.comparisons.report import RULES_JS, STATIC_DIR

    script = (STATIC_DIR / RULES_JS).read_text(encoding="utf-8")
    rule = re.search(r"/\^\[([^\]]+)\]/\.test\(text\)\) text = \"'\" \+ text", script).group(1)
    js_starts = rule.replace("\\-", "-").replace("\\t", "\t").replace("\\r", "\r")
    assert sorted(js_starts) == sorted(cli_starts) == sorted(FORMULA_STARTS)


# --- configuration errors: one line, no traceback --------------------------------------------------------------

@pytest.fixture
def config_env(tmp_path, monkeypatch):
    """Paths for a run that never starts: the sample as raw folder, marts and warehouse under ``tmp_path``, no
    DAGSTER_HOME; and a plain file to point variables at."""
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(SAMPLE_DIR))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    monkeypatch.delenv("PIPELINE_CACHE_DIR", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    return tmp_path, blocker


@pytest.mark.parametrize("command", [["run"], ["partitions"], ["report"]])
@pytest.mark.parametrize("case", ["cache_is_a_file", "home_missing", "home_is_a_file", "home_relative",
                                  "home_bad_yaml"])
def test_configuration_errors_are_one_line(config_env, capsys, monkeypatch, command, case):
    """PIPELINE_CACHE_DIR at a file, DAGSTER_HOME missing, a file, relative or with a dagster.yaml that does not
    parse: exit 1 and one line naming the variable, the path and the reason, for every command that uses them,
    before any work (no marts, no warehouse)."""
    tmp, blocker = config_env
    if case == "cache_is_a_file":
        if command == ["report"]:
            pytest.skip("the report reads no parse cache")
        monkeypatch.setenv("PIPELINE_CACHE_DIR", str(blocker))
        expected = f"PIPELINE_CACHE_DIR {blocker} is a file, not a folder"
    elif case == "home_missing":
        monkeypatch.setenv("DAGSTER_HOME", str(tmp / "no_home"))
        expected = f"DAGSTER_HOME {tmp / 'no_home'} does not exist"
    elif case == "home_is_a_file":
        monkeypatch.setenv("DAGSTER_HOME", str(blocker))
        expected = f"DAGSTER_HOME {blocker} is a file, not a folder"
    elif case == "home_relative":
        monkeypatch.setenv("DAGSTER_HOME", "relative/home")
        expected = "DAGSTER_HOME relative/home is not an absolute path"
    else:
        (tmp / "home").mkdir()
        (tmp / "home" / "dagster.yaml").write_text("storage:\n  nonsense: [\n")
        monkeypatch.setenv("DAGSTER_HOME", str(tmp / "home"))
        expected = f"DAGSTER_HOME {tmp / 'home'}: Dagster cannot load its instance (while parsing a flow node"
    if command == ["partitions"] and case == "cache_is_a_file":
        monkeypatch.setenv("DAGSTER_HOME", str(tmp))  # partitions needs one; the cache is what is wrong
    assert main(command) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "nothing run" in err[0], err
    assert not (tmp / "marts").exists() and not (tmp / "w.duckdb").exists()


def test_a_configuration_error_prints_no_traceback(config_env):
    """The whole process (as a user runs it): DAGSTER_HOME naming a folder that does not exist."""
    import os
    import subprocess
    import sys

    tmp, _ = config_env
    env = {**os.environ, "DAGSTER_HOME": str(tmp / "no_home")}
    done = subprocess.run([sys.executable, "-m", "pipeline", "run"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"pipeline not started: DAGSTER_HOME {tmp / 'no_home'} does not exist: "
                                        "create it (and copy dagster.yaml into it) or unset it for a throwaway "
                                        "instance: nothing run"]


def test_a_failed_step_prints_its_cause_first(config_env):
    """A run that fails at a step (an empty raw folder): the first line the terminal shows, stdout and stderr
    together, is the cause; the progress bars follow, then where the run stopped."""
    import os
    import subprocess
    import sys

    tmp, _ = config_env
    (tmp / "empty").mkdir()
    env = {**os.environ, "PIPELINE_RAW_DIR": str(tmp / "empty")}
    done = subprocess.run([sys.executable, "-m", "pipeline", "run"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, timeout=300)
    lines = done.stdout.splitlines()
    assert done.returncode == 1
    assert lines[0] == (f"ingest__parsed_runs: raw folder {tmp / 'empty'} is empty (an unmounted or unsynced volume "
                        "looks like this): nothing published, previous marts kept"), lines
    assert lines[1].startswith("[") and "ingest/parsed_runs" in lines[1] and "failed" in lines[1], lines
    assert lines[-1].startswith("pipeline stopped at ingest__parsed_runs after ") and len(
        [line for line in lines if "is empty" in line]) == 1, lines


def test_regressions_without_a_mart_says_what_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "nothing"))
    assert main(["regressions"]) == 1
    assert "run the pipeline first" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["regressions", "--since", "yesterday"])
    assert exit_info.value.code == 2


def _event(kind: str, step: str, cls_name: str = "", message: str = "", passed: bool = True):
    """A stand-in Dagster event with what ``unprinted_causes`` reads: a step failure (error chain of one) or a
    check evaluation (severity ERROR)."""
    from types import SimpleNamespace

    error = SimpleNamespace(cause=None, cls_name=cls_name, message=message)
    severity = SimpleNamespace(value="ERROR")
    data = SimpleNamespace(error=error, passed=passed, severity=severity, asset_key=None, check_name=step)
    return SimpleNamespace(is_step_failure=kind == "failure", step_key=step, event_type_value={
        "failure": "STEP_FAILURE", "evaluation": "ASSET_CHECK_EVALUATION"}[kind], event_specific_data=data)


def test_a_stopped_run_owes_each_cause_its_listener_missed_and_never_none():
    from pipeline.__main__ import unprinted_causes

    raised = _event("failure", "comparisons__published_marts", "PublishError", "PublishError: no run accepted")
    seen = "comparisons__published_marts: no run accepted"
    assert unprinted_causes([raised], []) == [seen]
    assert unprinted_causes([raised], [seen]) == []  # the listener printed it
    assert unprinted_causes([raised, raised], []) == [seen]  # once
    # a step stopped by a blocking check says nothing of its own (the check's line names it) ...
    blocked = _event("failure", "metrics__run_metrics", "DagsterAssetCheckFailedError",
                     "DagsterAssetCheckFailedError: 1 blocking check failed")
    assert unprinted_causes([blocked], ["BLOCKING check failed: metrics/run_metrics finite"]) == []
    # ... but without any line printed or owed, the first failure's root cause is printed whatever its kind
    assert unprinted_causes([blocked], []) == ["metrics__run_metrics: 1 blocking check failed"]
    assert unprinted_causes([_event("evaluation", "x")], []) == []  # a passing check, no failure: nothing
