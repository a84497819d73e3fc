"""InferenceX together-runner baseline summaries (``together_runner/baselines/<hw>/<framework>/<profile>/<isl/osl>/
<tuned|untuned>/conc<N>.json``): one fixed-sequence run per file, with the GPU power measured during it.

Layout: the run's metadata at the top level (``hw``, ``model`` as a Hugging Face id, ``framework``,
``precision``, ``isl``, ``osl``, ``tp``, ``ep``, ``conc``, ``profile`` = ``<model key>-<precision>``, ``image``,
``tuning``, ``host``, ``ts`` ISO 8601 UTC); a condensed bench result under ``metrics``
(``successful_requests``, ``total_token_throughput`` and ``output_token_throughput`` in tok/s,
``request_throughput`` req/s, ``{median,p99}_{ttft,tpot,e2el}_ms`` and ``median_itl_ms`` in ms); the power under
``gpu`` (``n_gpus`` GPUs sampled, ``mean_power_per_gpu_w`` and ``peak_power_per_gpu_w`` in W,
``total_avg_power_w`` = n_gpus × mean, ``tokens_per_kw`` = output tok/s / (total W / 1000)).
There is no duration, no request count issued and no failed count: those stay null.
"""

from __future__ import annotations

from typing import Any, Mapping

from pipeline.ingest.gpus import gpu_count
from pipeline.ingest.keys import model_key, normalize_precision, to_int
from pipeline.ingest.parsers.base import (
    FieldError,
    ParsedRun,
    input_throughput,
    integer,
    interactivity_block,
    latency_block,
    metadata_keys_in,
    number,
)
from pipeline.ingest.schema import METADATA_KEYS

FORMAT = "inferencex_together"


def detect(doc: Mapping[str, Any]) -> str | None:
    """``inferencex_together`` for a baseline summary: ``hw`` plus a ``metrics`` object with
    ``total_token_throughput`` or ``successful_requests``; else None."""
    metrics = doc.get("metrics")
    if "hw" in doc and isinstance(metrics, dict) and (
            "total_token_throughput" in metrics or "successful_requests" in metrics):
        return FORMAT
    return None


def parse(doc: Mapping[str, Any]) -> ParsedRun:
    """Normalize one together-runner baseline.

    Returns:
        ParsedRun with latencies in s (ms keys × 1e-3), system throughputs in tok/s (input = total − output),
        ``completed`` = ``successful_requests``; ``reported_avg_power_w_per_gpu`` = ``gpu.mean_power_per_gpu_w``
        (W) when the GPUs sampled (``gpu.n_gpus``) are the run's GPUs (tp × pp), else null with the reason in
        ``derivations`` (a mean over idle GPUs is not the run's per-GPU power); ``reported_energy_j`` null (no
        duration). Metadata in the file: its top-level keys (docs/inputs.md) except ``model``, which is the
        ``profile`` without its ``-<precision>`` suffix (``dsr1-fp4`` → ``dsr1``), and ``run_date`` from ``ts``;
        engine-implied: ``model`` from the Hugging Face id (``keys.model_key``).

    Raises:
        FieldError: ``not_an_object:gpu`` when ``gpu`` is not an object; ``not_a_number:metrics.<key>`` /
            ``not_a_number:gpu.<key>`` for a non-numeric value; ``not_an_integer:<key>`` for a bad count.
    """
    metrics = doc["metrics"]
    gpu = doc.get("gpu") if doc.get("gpu") is not None else {}
    if not isinstance(gpu, dict):
        raise FieldError("not_an_object", "gpu", f"expected an object, got {type(gpu).__name__}")
    run = ParsedRun()
    try:
        run.values.update(latency_block(metrics, "{stat}_{metric}_ms", 1e-3))
        run.values.update(interactivity_block(metrics, "{stat}_tpot_ms", "ms"))
    except FieldError as exc:  # name the section the key is in
        raise FieldError("not_a_number", f"metrics.{exc.reason_code.split(':', 1)[1]}", str(exc)) from exc
    run.values["latency_unit_in_file"] = "ms"
    run.values["percentile_method"] = "linear_interpolation"  # the bench client's numpy.percentile
    total = number(metrics, "total_token_throughput", label="metrics.total_token_throughput")
    output = number(metrics, "output_token_throughput", label="metrics.output_token_throughput")
    run.values.update(
        completed=integer(metrics, "successful_requests", label="metrics.successful_requests"),
        request_throughput_req_s=number(metrics, "request_throughput", label="metrics.request_throughput"),
        total_tput_tok_s=total,
        output_tput_tok_s=output,
        input_tput_tok_s=input_throughput(total, output),
        model_id=None if doc.get("model") in (None, "") else str(doc["model"]),
    )
    if total is not None and output is not None:
        run.derivations.append("input_tput_tok_s = total_token_throughput - output_token_throughput")

    meta = metadata_keys_in(doc, METADATA_KEYS)
    meta.pop("model", None)  # a Hugging Face id; the model key is the profile's
    profile_key = _model_from_profile(doc.get("profile"), doc.get("precision"))
    if profile_key:
        meta["model"] = profile_key
    if "run_date" not in meta and doc.get("ts"):
        meta["run_date"] = doc["ts"]
    run.in_file_meta = meta
    run.fallback_meta = {"model": model_key(doc.get("model"))}
    _power(gpu, doc, run)
    return run


def _power(gpu: Mapping[str, Any], doc: Mapping[str, Any], run: ParsedRun) -> None:
    """The measured mean power per GPU (W), kept only when ``gpu.n_gpus`` equals the run's GPU count."""
    mean_w = number(gpu, "mean_power_per_gpu_w", label="gpu.mean_power_per_gpu_w")
    sampled = integer(gpu, "n_gpus", label="gpu.n_gpus")
    if mean_w is None:
        return
    try:
        tp, pp = to_int(doc.get("tp")), to_int(doc.get("pp"))
    except ValueError as exc:
        raise FieldError("not_an_integer", "tp", str(exc)) from exc
    run_gpus = gpu_count(tp, pp)
    if sampled is not None and run_gpus is not None and sampled != run_gpus:
        run.derivations.append(
            f"power not used: gpu.mean_power_per_gpu_w {mean_w} W is a mean over gpu.n_gpus={sampled} GPUs, "
            f"the run used tp×pp={run_gpus}")
        return
    run.values["reported_avg_power_w_per_gpu"] = mean_w


def _model_from_profile(profile: Any, precision: Any) -> str | None:
    """``dsr1-fp4`` with precision ``fp4`` → ``dsr1``; None when the profile does not end in its precision."""
    if not profile or not precision:
        return None
    text, suffix = str(profile).strip().lower(), "-" + (normalize_precision(precision) or "")
    return text[: -len(suffix)] if len(text) > len(suffix) and text.endswith(suffix) else None
