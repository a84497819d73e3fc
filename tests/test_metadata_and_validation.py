"""Metadata precedence and normalization (docs/inputs.md) and the row rules (reason codes, docs/inputs.md)."""

import datetime as dt

import pytest

from pipeline.ingest.keys import (
    model_key_from_id,
    normalize_hw,
    normalize_precision,
    normalize_spec,
)
from pipeline.ingest.metadata import MetadataError, load_manifest, resolve
from pipeline.metrics.reference import load_gpu_reference
from pipeline.validate.rules import check_run, engine_implied_counts, metadata_source_of, rules


@pytest.mark.parametrize(
    "raw, key",
    [
        ("mi355x-amds_0", "mi355x"),
        ("b200-dgxc", "b200"),
        ("cluster:mi355x-amds", "mi355x"),
        ("GB200", "gb200"),
        ("gb200-nv_3", "gb200"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA B200", "b200"),
        ("MI355", "mi355x"),
        ("950dt", "950dt"),
        ("", None),
    ],
)
def test_hw_aliases(raw, key):
    assert normalize_hw(raw) == key


def test_precision_and_spec_aliases():
    assert [normalize_precision(p) for p in ("NVFP4", "mxfp4", "FP8", "bfloat16")] == ["fp4", "fp4", "fp8", "bf16"]
    assert [normalize_spec(s) for s in ("", "None", "MTP", "eagle3")] == ["none", "none", "mtp", "eagle3"]


def test_model_key_from_hf_cache_path():
    path = "/root/.cache/huggingface/hub/models--openai--gpt-oss-120b/snapshots/b5c939de8f754692c1647ca79fbf85e8c1e70f8a"
    assert model_key_from_id(path) == "gpt-oss-120b"
    assert model_key_from_id("zai-org/GLM-5-FP8") == "glm-5-fp8"


def test_precedence_file_then_sidecar_then_manifest_then_engine():
    meta, sources, conflicts = resolve(
        in_file={"conc": 16},
        sidecar={"hw": "H200", "precision": "fp8", "tp": "8"},
        manifest_row={"hw": "b200", "precision": "fp8", "model": "glm-5", "isl": "1024", "osl": "128"},
        fallback={"framework": "vllm", "model": "glm-5-fp8"},
    )
    assert meta["hw"] == "h200" and sources["hw"] == "sidecar"
    assert meta["model"] == "glm-5" and sources["model"] == "runs.csv"
    assert meta["framework"] == "vllm" and sources["framework"] == "engine"
    assert meta["tp"] == 8 and meta["isl"] == 1024
    assert meta["spec_decoding"] == "none" and sources["spec_decoding"] == "default"
    assert conflicts == []  # sidecar vs runs.csv disagreeing on hw: the sidecar wins, the file said nothing


def test_file_vs_sidecar_disagreement_is_a_conflict():
    meta, _, conflicts = resolve({"conc": 16}, {"conc": "32"}, None, {})
    assert meta["conc"] == 16
    assert conflicts == ["conc: file=16 sidecar=32"]


def test_equal_values_after_normalization_do_not_conflict():
    _, _, conflicts = resolve({"hw": "mi355x-amds_0", "precision": "mxfp4"}, {"hw": "MI355X", "precision": "fp4"},
                              None, {})
    assert conflicts == []


def test_bad_metadata_value_names_key_and_source():
    with pytest.raises(MetadataError) as err:
        resolve({}, {"tp": "eight"}, None, {})
    assert err.value.reason_code == "invalid_metadata:tp"
    assert "sidecar" in err.value.detail


def _good_run(**over):
    run = {"model": "dsr1", "hw": "h200", "framework": "vllm", "precision": "fp8", "spec_decoding": "none",
           "isl": 1024, "osl": 1024, "conc": 8, "tp": 8, "disagg": False, "completed": 80, "failed": 0,
           "num_prompts": 80, "total_tput_tok_s": 5000.0, "median_tpot_s": 0.02, "run_date": dt.date(2026, 1, 1)}
    run.update(over)
    return run


RULES = rules(load_gpu_reference().column("hw").to_pylist())


@pytest.mark.parametrize(
    "override, code",
    [
        ({}, None),
        ({"completed": 0, "failed": 80}, "no_completed_requests"),
        ({"completed": 70, "failed": 10}, "failed_requests"),
        ({"completed": 70, "failed": None}, "failed_requests"),
        ({"total_tput_tok_s": None}, "missing_field:total_token_throughput"),
        ({"total_tput_tok_s": 0.0}, "non_positive:total_token_throughput"),
        ({"total_tput_tok_s": float("nan")}, "non_finite:total_token_throughput"),
        ({"median_tpot_s": -0.01}, "non_positive:median_tpot_ms"),
        ({"median_tpot_s": float("inf")}, "non_finite:median_tpot_ms"),
        ({"hw": "rtx4090"}, "unknown_hw"),
        ({"isl": None}, "missing_metadata:isl"),
        ({"conc": None}, "missing_metadata:conc"),
        ({"tp": None}, "missing_metadata:tp"),
        ({"disagg": True, "num_prefill_gpu": 4}, "missing_metadata:num_decode_gpu"),
        ({"metadata_conflicts": "conc: file=16 sidecar=32"}, "metadata_conflict:conc"),
    ],
)
def test_row_rules(override, code):
    finding = check_run(_good_run(**override), RULES)
    assert (finding[0] if finding else None) == code


def test_detail_lists_every_failing_rule():
    code, detail = check_run(_good_run(completed=0, hw=None), RULES)
    assert code == "no_completed_requests"
    assert "missing_metadata:hw" in detail


@pytest.mark.parametrize("key", ["model", "framework", "spec_decoding", "image"])
def test_text_keys_are_bounded_in_length_and_characters(key):
    """A key becomes a folder name and a label: 120 characters pass, 121 or a control character do not."""
    from pipeline.ingest.metadata import MetadataError, normalize

    assert len(normalize({key: "a" * 120}, "the sidecar")[key]) == 120
    for bad, why in (("a" * 121, "121 characters"), ("a\nb", "control characters"), ("a\x00b", "control")):
        with pytest.raises(MetadataError, match=why) as caught:
            normalize({key: bad}, "the sidecar")
        assert caught.value.reason_code == f"invalid_metadata:{key}"
        assert len(caught.value.detail) < 200  # the value is quoted shortened, not whole


# load_manifest reads runs.csv with csv.reader; csv.DictReader's rows are the reference (what it read before):
# blank lines, short and long rows, empty and repeated header names, padding, a BOM, quoted newlines.
_MANIFESTS = [
    "file,hw,conc\na.json,h100,8\n",
    "\ufefffile,hw,conc\r\na.json, H200 ,16\r\n\r\nb.json,,32\r\n",
    "file,hw\na.json\nb.json,b200,extra,cells\n",
    "file,,hw,hw\na.json,x,mi300x,mi355x\n",
    "hw,file\nh100,\n,c.json\n",
    " file ,hw\n a.json ,h100\n",
    'file,model\n"a.json","deepseek\nr1"\n',
    "\nfile,hw\na.json,h100\n",
    "",
]


def _dictreader_manifest(text: str) -> dict:
    import csv
    import io

    rows = {}
    for row in csv.DictReader(io.StringIO(text.lstrip("\ufeff"), newline="")):
        name = (row.get("file") or "").strip()
        if name:
            rows[name] = {k.strip(): v.strip() for k, v in row.items()
                          if isinstance(k, str) and k and isinstance(v, str) and v.strip() != ""}
    return rows


@pytest.mark.parametrize("text", _MANIFESTS)
def test_runs_csv_reads_as_csv_dictreader_would(tmp_path, text):
    (tmp_path / "runs.csv").write_text(text, encoding="utf-8")
    assert load_manifest(tmp_path) == _dictreader_manifest(text)


def test_runs_csv_absent_is_no_rows(tmp_path):
    assert load_manifest(tmp_path) == {}
    assert load_manifest(tmp_path / "missing") == {}


@pytest.mark.parametrize("sources, read", [
    (None, {}),
    ("", {}),
    ("hw=sidecar;model=file", {"hw": "sidecar", "model": "file"}),
    ("hw=file;;tp=engine;", {"hw": "file", "tp": "engine"}),      # empty pairs are skipped
    ("hw=runs.csv=x", {"hw": "runs.csv=x"}),                       # the first '=' ends the key
    ("tp", {"tp": ""}),                                             # a key with no '=' has an empty source
])
def test_metadata_source_of_reads_key_equals_source_pairs(sources, read):
    """``metadata_sources`` reads back as {key: source}: ';'-separated pairs, split at their first '='."""
    assert metadata_source_of({"metadata_sources": sources}) == read


def test_engine_implied_counts_in_gpu_count_key_order():
    """Only count keys whose source is ``engine`` are engine-implied, named in tp, pp, pcp, decode, prefill order."""
    run = {"metadata_sources": "num_prefill_gpu=engine;hw=engine;tp=engine;pp=sidecar;num_decode_gpu=engine"}
    assert engine_implied_counts(run) == ["tp", "num_decode_gpu", "num_prefill_gpu"]
    assert engine_implied_counts({"metadata_sources": None}) == []
