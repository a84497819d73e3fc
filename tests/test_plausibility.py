"""Plausibility reference, its rules at their boundaries, and the per-file limits of the parse."""

import json
import re
import shutil
from pathlib import Path

import pytest

from pipeline.ingest.metadata import MetadataError, normalize
from pipeline.ingest.parsers import read_file
from pipeline.ingest.parsers.base import FieldError, integer
from pipeline.ingest.parsers.json_shape import MAX_DEPTH, duplicate_keys
from pipeline.io.paths import REFERENCE_DIR
from pipeline.validate.plausibility import PlausibilityError, load_plausibility
from pipeline.validate.rules import check_run, rules

GOOD = Path(__file__).parent / "good_inputs" / "good_vllm_h200_conc8.json"
KNOWN_HW = ["h200", "b200"]
RUN = {"hw": "h200", "model": "dsr1", "framework": "vllm", "precision": "fp8", "spec_decoding": "none",
       "tp": 8, "isl": 1024, "osl": 1024, "conc": 8, "benchmark_type": "fixed_seq", "completed": 80,
       "total_tput_tok_s": 1359.6, "output_tput_tok_s": 679.8, "median_tpot_s": 0.0112,
       "median_ttft_s": 0.1401, "median_e2el_s": 11.61, "duration_s": 120.5, "total_input_tokens": 81920,
       "total_output_tokens": 81920, "latency_unit_in_file": "ms"}


def _code(**change):
    found = check_run({**RUN, **change}, rules(KNOWN_HW))
    return None if found is None else found[0]


def _codes(**change) -> set[str]:
    """Every code the rules give the run (the detail lists them all), so one rule's verdict is seen whatever the others
    say."""
    found = check_run({**RUN, **change}, rules(KNOWN_HW))
    return set() if found is None else {part.split(": ", 1)[0] for part in found[1].split("; ")}


def test_the_run_itself_passes():
    assert _code() is None


def test_tok_s_per_gpu_ceiling_at_its_boundary():
    # H200: 1.979 PFLOP/s dense FP8; DeepSeek-R1 activates 37B parameters: 1.979e15 / (2 × 37e9) tok/s/GPU
    ceiling = 1.979e15 / 74e9
    assert load_plausibility().ceiling("h200", "dsr1") == pytest.approx(ceiling) == pytest.approx(26743.24, abs=0.01)
    tokens = ceiling * 8 * 120.5  # keep the duration check satisfied: tokens = throughput × duration
    at = dict(total_tput_tok_s=ceiling * 8, total_input_tokens=int(tokens / 2), total_output_tokens=int(tokens / 2),
              output_tput_tok_s=ceiling * 4)
    assert _code(**at) is None
    assert _code(**{**at, "total_tput_tok_s": ceiling * 8 * 1.0001}) == "implausible:tput_per_gpu"
    # a model model_active_params.csv does not list has no ceiling: its run waits for the size (no 1B wildcard)
    assert load_plausibility().ceiling("h200", "some-new-model") is None
    assert _code(model="some-new-model", **at) == "unknown_model_size"
    assert load_plausibility().ceiling("rtx-4070", "dsr1") is None


@pytest.mark.parametrize("field, inside, outside, code", [
    ("median_tpot_s", 0.0005, 0.000499, "implausible:median_tpot_ms"),
    ("median_tpot_s", 5.0, 5.001, "implausible:median_tpot_ms"),
    ("median_ttft_s", 0.001, 0.000999, "implausible:median_ttft_ms"),
    ("median_e2el_s", 86400.0, 86401.0, "implausible:median_e2el_ms"),
    ("median_e2el_s", 11.61, -11.61, "implausible:median_e2el_ms"),
    ("tp", 1024, 1025, "implausible:tp"),
    ("conc", 1, 0, "implausible:conc"),
    ("isl", 1048576, 1048577, "implausible:isl"),
    ("ep", 0, -1, "implausible:ep"),
])
def test_range_rules_at_their_boundaries(field, inside, outside, code):
    unit = {"latency_unit_in_file": None}  # no unit-slip evidence: the range decides (else unit_mismatch comes first)
    # a TPOT or E2EL at a range's end no longer fits the other (E2EL 11.61 s is 22× a 0.5 ms TPOT over 1023 tokens:
    # inconsistent:e2el, checked after the ranges), so the range's own code is what is held here
    assert code not in _codes(**{field: inside}, **unit)
    assert _code(**{field: outside}, **unit) == code


def test_duration_must_match_tokens_over_throughput():
    # 81,920 output tokens at 679.8 tok/s take 120.5 s; the ratio may be 0.5 to 2
    assert _code(duration_s=81920 / 679.8 / 2) is None
    assert _code(duration_s=81920 / 679.8 / 2.01) == "implausible:output_throughput"


def test_unknown_benchmark_type():
    assert _code(benchmark_type="mystery") == "unknown_benchmark_type"


@pytest.mark.parametrize("file, edit, message", [
    ("plausibility.csv", lambda t: t.replace("median_tpot_s,median_tpot_ms,0.0005,5", "median_tpot_s,median_tpot_ms,5,0.0005"), "line 2: min 5.0 > max 0.0005"),
    ("plausibility.csv", lambda t: t.replace("median_ttft_s,", "medain_ttft_s,", 1), "line 3, column field: 'medain_ttft_s'"),
    ("plausibility.csv", lambda t: t.replace("field,reason_field,min,max", "field,reason_field,low,max"), "missing column(s) min"),
    ("gpu_peak_flops.csv", lambda t: t.replace("h200,1.979", "h200,fast"), "line 3, column dense_pflops: 'fast'"),
    ("model_active_params.csv", lambda t: t + '*,1,"any other model"\n', "a '*' row would give every unlisted model"),
    ("plausibility.csv", lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("e2el_decode_ratio")),
     "no 'e2el_decode_ratio' row"),
    ("gpu_reference.csv", lambda t: t.replace(",4.8,2026-07", ",,2026-07"), "line 3, column mem_bandwidth_tb_s: ''"),
])
def test_a_malformed_reference_names_file_line_and_column(tmp_path, file, edit, message):
    for name in ("plausibility.csv", "gpu_peak_flops.csv", "model_active_params.csv", "gpu_reference.csv"):
        shutil.copy(REFERENCE_DIR / name, tmp_path / name)
    (tmp_path / file).write_text(edit((tmp_path / file).read_text()))
    with pytest.raises(PlausibilityError, match=re.escape(message)) as error:
        load_plausibility(tmp_path)
    assert file in str(error.value)


def _nested(depth: int) -> bytes:
    good = GOOD.read_text().rstrip().rstrip("}")
    # the run object is level 1, each object under "extra" one more
    return (good + ', "extra": ' + '{"a": ' * (depth - 1) + "1" + "}" * (depth - 1) + "}").encode()


def test_nesting_limit():
    assert [r.reason_code for r in read_file("x.json", _nested(MAX_DEPTH)).rejects] == []
    assert [r.reason_code for r in read_file("x.json", _nested(MAX_DEPTH + 1)).rejects] == ["too_deep"]
    assert [r.reason_code for r in read_file("x.json", b'{"a":' * 10000 + b"1" + b"}" * 10000).rejects] == ["too_deep"]


def test_duplicate_keys_found_whatever_the_spacing_and_never_invented():
    assert duplicate_keys('{"a" : 1, "b": {"c":2,"c" :3}}', {"a": 1, "b": {"c": 3}}) == ["c"]
    assert duplicate_keys('{"a":1,"a"\n:2}', {"a": 2}) == ["a"]
    text = '{"note": "x\\": 1, \\"y\\":", "a": 1}'  # a string value holding quote-colon sequences
    assert duplicate_keys(text, json.loads(text)) == []
    lines = GOOD.read_text().rstrip().rstrip("}") + ', "failed": 0}'
    assert [r.reason_code for r in read_file("x.json", lines.encode()).rejects] == ["duplicate_key:failed"]


def test_jsonl_duplicate_key_costs_one_line():
    line = json.dumps(json.loads(GOOD.read_text()))
    text = line + "\n" + line[:-1] + ', "completed": 80}\n'
    readout = read_file("x.jsonl", text.encode())
    assert len(readout.runs) == 1 and [(r.row, r.reason_code) for r in readout.rejects] == [(1, "duplicate_key:completed")]


def test_integer_ranges():
    assert integer({"n": 2**63 - 1}, "n") == 2**63 - 1
    with pytest.raises(FieldError) as error:
        integer({"n": 2**63}, "n")
    assert error.value.reason_code == "int_out_of_range:n"
    assert normalize({"tp": 2**31 - 1}, "the sidecar") == {"tp": 2**31 - 1}
    with pytest.raises(MetadataError) as error:
        normalize({"conc": 2**31}, "the file")
    assert error.value.reason_code == "int_out_of_range:conc"


def test_the_tpot_bound_is_read_from_the_reference_by_the_rules_and_the_suite(tmp_path, monkeypatch):
    """plausibility.csv's ``median_tpot_s`` row is the one TPOT bound (it was also written as 0.5 ms and
    5 s in rules.py twice and in the GX suite): raising its minimum to 1 ms makes a 0.8 ms median TPOT read from
    ``*_ms`` keys a unit slip for the unit rule and the range rule, and the blocking expectation reads it too."""
    from pipeline.validate.expectations import build_suite

    fast = {"median_tpot_s": 0.0008, "median_e2el_s": 0.0008 * 1023 + 0.1401}
    assert _codes(**fast) == set()  # inside the bundled 0.5 ms – 5 s
    reference = tmp_path / "reference"
    shutil.copytree(REFERENCE_DIR, reference)
    text = (reference / "plausibility.csv").read_text(encoding="utf-8")
    edited = text.replace("median_tpot_s,median_tpot_ms,0.0005,", "median_tpot_s,median_tpot_ms,0.001,")
    assert edited != text
    (reference / "plausibility.csv").write_text(edited, encoding="utf-8")
    monkeypatch.setenv("PIPELINE_REFERENCE_DIR", str(reference))
    monkeypatch.setattr("pipeline.validate.rules._LOADED", {})
    assert {"implausible_value:median_tpot_ms", "implausible:median_tpot_ms"} <= _codes(**fast)
    (tpot,) = [x for x in build_suite(KNOWN_HW) if x.name == "tpot_in_plausible_range"]
    assert (tpot.gx.min_value, tpot.gx.max_value) == (0.001, 5.0)


def test_reference_numbers_out_of_range_and_repeated_keys_give_the_whole_message(tmp_path):
    for name in ("plausibility.csv", "gpu_peak_flops.csv", "model_active_params.csv", "gpu_reference.csv"):
        shutil.copy(REFERENCE_DIR / name, tmp_path / name)
    plausibility, peaks = tmp_path / "plausibility.csv", tmp_path / "gpu_peak_flops.csv"
    original = plausibility.read_text()
    row = "median_tpot_s,median_tpot_ms,0.0005,5,"  # line 2

    def error(new_row):
        plausibility.write_text(original.replace(row, new_row, 1))
        with pytest.raises(PlausibilityError) as caught:
            load_plausibility(tmp_path)
        return str(caught.value)

    # a range's max must be > 0, its min may be 0 but not negative; neither may be infinite
    assert error("median_tpot_s,median_tpot_ms,0,0,") == \
        f"{plausibility} line 2, column max: 0.0 must be finite and > 0"
    assert error("median_tpot_s,median_tpot_ms,-1,5,") == \
        f"{plausibility} line 2, column min: -1.0 must be finite and ≥ 0"
    assert error("median_tpot_s,median_tpot_ms,0.0005,inf,") == \
        f"{plausibility} line 2, column max: inf must be finite and > 0"
    plausibility.write_text(original.replace(row, "median_tpot_s,median_tpot_ms,0,5,", 1))
    assert load_plausibility(tmp_path).range_of("median_tpot_s").min == 0.0  # a min of 0 is allowed
    plausibility.write_text(original)
    text = peaks.read_text()
    peaks.write_text(text + "h200,1,fp8,again\n")
    last = len(text.splitlines()) + 1  # the appended row's line
    with pytest.raises(PlausibilityError) as caught:
        load_plausibility(tmp_path)
    assert str(caught.value) == f"{peaks} line {last}, column hw: 'h200' given twice"


def test_reference_rows_and_columns_errors_give_the_whole_message(tmp_path):
    for name in ("plausibility.csv", "gpu_peak_flops.csv", "model_active_params.csv", "gpu_reference.csv"):
        shutil.copy(REFERENCE_DIR / name, tmp_path / name)
    plausibility = tmp_path / "plausibility.csv"
    original = plausibility.read_text()

    def error():
        with pytest.raises(PlausibilityError) as caught:
            load_plausibility(tmp_path)
        return str(caught.value)

    plausibility.write_text(original.replace("field,reason_field,min,max", "field,reason_field,low,high", 1))
    assert error() == f"{plausibility}: missing column(s) min, max"
    plausibility.write_text(original.replace("median_ttft_s,", "medain_ttft_s,", 1))
    assert error() == (f"{plausibility} line 3, column field: 'medain_ttft_s' is not a numeric run column nor one "
                       "of output_duration_ratio, total_duration_ratio, e2el_decode_ratio, weight_bytes_per_param")
    plausibility.write_text(original + "median_tpot_s,median_tpot_ms,1,2,s,again\n")
    last = len(original.splitlines()) + 1  # the appended row's line
    assert error() == f"{plausibility} line {last}, column field: 'median_tpot_s' given twice"
    # min equal to max is a range of one value
    plausibility.write_text(original.replace("median_tpot_s,median_tpot_ms,0.0005,5,",
                                             "median_tpot_s,median_tpot_ms,5,5,"))
    assert load_plausibility(tmp_path).range_of("median_tpot_s").min == 5.0
    plausibility.write_text(original)
    (tmp_path / "gpu_peak_flops.csv").unlink()
    assert error().startswith(f"{tmp_path / 'gpu_peak_flops.csv'}: cannot be read: ")


def test_reference_values_read_as_written(tmp_path):
    reference = load_plausibility()
    # spec_accept_length's max (8 tokens/step) and weight_bytes_per_param's min (0.5 bytes) in plausibility.csv
    assert (reference.max_tokens_per_step, reference.weight_bytes_per_param) == (8.0, 0.5)
    assert (reference.range_of("median_tpot_s").unit, reference.range_of("median_tpot_s").reason_field) == \
        ("s", "median_tpot_ms")
    # h200 dense 1.979 PFLOP/s, dsr1 37e9 activated: 1.979e15 / (2 x 37e9) = 26743.243243... tok/s/GPU
    assert reference.ceiling("h200", "dsr1") == pytest.approx(26743.243243243243, rel=1e-16)
    # 4.8 TB/s x 8 GPUs x 1 token / (37e9 x 0.5 bytes) = 38.4e12 / 18.5e9 = 2075.675675... tok/s/user
    assert reference.intvty_ceiling("h200", "dsr1", 8, 1.0) == pytest.approx(2075.675675675676, rel=1e-15)
    for name in ("plausibility.csv", "gpu_peak_flops.csv", "model_active_params.csv", "gpu_reference.csv"):
        shutil.copy(REFERENCE_DIR / name, tmp_path / name)
    plausibility, peaks, models = (tmp_path / n for n in ("plausibility.csv", "gpu_peak_flops.csv",
                                                           "model_active_params.csv"))
    original = plausibility.read_text()
    # a blank reason_field is the field itself, a blank unit is ""
    plausibility.write_text(original.replace("median_tpot_s,median_tpot_ms,0.0005,5,s,",
                                             "median_tpot_s,,0.0005,5,,"))
    assert (load_plausibility(tmp_path).range_of("median_tpot_s").reason_field,
            load_plausibility(tmp_path).range_of("median_tpot_s").unit) == ("median_tpot_s", "")

    def error():
        with pytest.raises(PlausibilityError) as caught:
            load_plausibility(tmp_path)
        return str(caught.value)

    plausibility.write_text(original.replace("weight_bytes_per_param,median_intvty,0.5,",
                                             "weight_bytes_per_param,median_intvty,0,"))
    assert error() == f"{plausibility}: 'weight_bytes_per_param' min must be > 0 (the ceiling divides by it)"
    plausibility.write_text(original)
    peaks.write_text("hw,dense_pflops,precision,basis\n")
    assert error() == f"{peaks}: no GPU rows"
    shutil.copy(REFERENCE_DIR / "gpu_peak_flops.csv", peaks)
    models.write_text(models.read_text() + '*,1,"any other model"\n')
    assert error() == (f"{models}: a '*' row would give every unlisted model one size; list each model instead (an "
                       "unlisted one is quarantined as unknown_model_size)")
    with pytest.raises(PlausibilityError) as caught:
        reference.range_of("no_such_field")
    assert str(caught.value) == "plausibility.csv: no row for no_such_field"
