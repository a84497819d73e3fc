"""Normalization of run-metadata values to the lowercase keys of docs/inputs.md, and their display labels.

One place for the key logic (the dashboard copies its hardware-key logic three times; we keep one).
"""

from __future__ import annotations

import csv
import functools
import re
import string
from datetime import date, datetime
from pathlib import Path

from pipeline.io.opener import RefusedFile, open_text
from pipeline.io.paths import reference_dir

_GPU_ALIASES = {"mi355": "mi355x", "mi325": "mi325x", "mi300": "mi300x"}
# Marketing names as drivers and engines print them (nvidia-smi, amd-smi, TRT-LLM's `machine.name`), e.g.
# "NVIDIA H100 80GB HBM3", mapped to keys by a table beside the GPU reference.
GPU_ALIASES_CSV_NAME = "gpu_aliases.csv"


def gpu_keys() -> tuple[str, ...]:
    """Every ``hw`` of ``gpu_reference.csv`` in ``reference_dir()``, longest first (ties in the table's order), so
    a prefix match tries ``gb200`` before ``b200``. The table is the one list of GPUs: a GPU added there is read,
    validated and sorted like the others, with no code (docs/inputs.md section 7)."""
    return tuple(sorted(gpu_display_order(), key=lambda k: -len(k)))


def gpu_display_order() -> tuple[str, ...]:
    """The ``hw`` keys of ``gpu_reference.csv`` in ``reference_dir()`` in the table's row order, the order pages and
    comparisons list GPUs in (the bundled table: NVIDIA by generation, then AMD). Empty when the table cannot be
    read: the reference asset then stops the run, naming the file."""
    return _reference_gpus(reference_dir())


@functools.cache
def _reference_gpus(folder: Path) -> tuple[str, ...]:
    try:
        handle = open_text(folder / "gpu_reference.csv", "reference")
        keys = [(row.get("hw") or "").strip().lower() for row in csv.DictReader(handle)]
    except (OSError, RefusedFile, UnicodeDecodeError, csv.Error):  # reported by the reference asset
        return ()
    return tuple(dict.fromkeys(k for k in keys if k))


PRECISION_ALIASES = {
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4": "fp4",
    "modelopt_fp4": "fp4",
    "w4a4_mxfp4": "fp4",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "e4m3": "fp8",
    "modelopt": "fp8",
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "int4": "int4",
    "w4a16": "int4",
    "awq": "int4",
    "int8": "int8",
}

SPEC_ALIASES = {
    "": "none",
    "none": "none",
    "off": "none",
    "false": "none",
    "no": "none",
    "mtp": "mtp",
    "nextn": "mtp",
    "eagle": "eagle",
    "eagle3": "eagle3",
    "ngram": "ngram",
    "medusa": "medusa",
    "draft_model": "draft_model",
}

FRAMEWORK_LABELS = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "trtllm": "TRT-LLM",
    "trt": "TRT-LLM",
    "dynamo-trt": "Dynamo TRT-LLM",
    "dynamo-sglang": "Dynamo SGLang",
    "dynamo-vllm": "Dynamo vLLM",
    "mori-sglang": "MoRI SGLang",
    "atom": "ATOM",
}


# The metadata keys whose values are keys: they make the side and comparison ids (pipeline/frontiers/sides.py),
# the report's page names and the charts' labels; ``model`` also names the partition folders of the run-level marts
# (``runs/<model>/<run_date>/``). ``key_problem`` says which values cannot be one.
KEY_FIELDS = frozenset(("model", "hw", "precision", "spec_decoding", "framework", "kv_offload"))
# The word a side id writes for a pooled spec_decoding or framework (pipeline.frontiers.sides.POOLED).
POOLED_WORD = "all"


def key_problem(field: str, key: str) -> str | None:
    """Why the normalized text ``key`` cannot be the value of ``field`` (one of ``KEY_FIELDS``), or None when it
    can (docs/inputs.md, "Which values may be keys"). Length is bounded before (``metadata.MAX_TEXT_CHARS``).

    Every key is printable (``str.isprintable``: no control, format (e.g. U+202E, which reverses the text shown
    after it), line-separator or unassigned character) and holds neither ``|`` nor ``~``, the separators of side
    and comparison ids; ``spec_decoding`` and ``framework`` are not ``all``, the word of a pooled side. A model key
    also names one folder: it does not start with ``.`` (``.`` and ``..`` are path steps, a leading dot hides a
    folder) and holds no path separator (``/``, ``\\``).
    """
    if not key.isprintable():
        char = next(c for c in key if not c.isprintable())
        return f"holds the unprintable character U+{ord(char):04X}"
    if "|" in key or "~" in key:
        return "holds '|' or '~', which separate the keys in side and comparison ids"
    if field in ("spec_decoding", "framework") and key == POOLED_WORD:
        return f"is '{POOLED_WORD}', the word of a side that pools every {field}"
    if field == "model":
        if key.startswith("."):
            return ("starts with '.': '.' and '..' are path steps and a leading dot hides a folder (a model key "
                    "names the folder runs/<model>/)")
        if "/" in key or "\\" in key:
            return ("holds a path separator ('/' or '\\'): a model key names one folder (runs/<model>/); give the "
                    "model's key (e.g. dsr1), not a path or a repository id")
    return None


def normalize_hw(value: object) -> str | None:
    """GPU key for a hardware name, or the cleaned raw name when it is not a known GPU.

    Accepts runner names with suffixes (``mi355x-amds_0`` → ``mi355x``, ``b200-dgxc`` → ``b200``), cluster prefixes
    (``cluster:mi355x-amds`` → ``mi355x``) and marketing names through ``gpu_name_aliases`` (``NVIDIA H100 80GB
    HBM3`` → ``h100``; the whole name, so ``NVIDIA H100 PCIe`` is not an H100 SXM). An unknown name
    comes back lowercased and stripped so the quarantine can say which name was not mapped. Empty → ``None``.
    """
    if value is None:
        return None
    text = str(value).strip().lower()
    if not text:
        return None
    if ":" in text:
        text = text.rsplit(":", 1)[1]
    for key in gpu_keys():
        if text == key or text.startswith(key + "-") or text.startswith(key + "_"):
            return key
    head = re.split(r"[-_ ]", text, maxsplit=1)[0]
    if head in _GPU_ALIASES:
        return _GPU_ALIASES[head]
    return gpu_name_aliases().get(" ".join(text.split()), text)


def gpu_name_aliases(path: Path | None = None) -> dict[str, str]:
    """GPU marketing names → GPU keys, from ``gpu_aliases.csv`` (columns ``alias``, ``hw``) of ``reference_dir()``
    (``PIPELINE_REFERENCE_DIR``, default data/reference) unless ``path`` is given; read once per file.

    Names are matched whole, lowercased with runs of spaces collapsed: "NVIDIA H200 NVL" is another SKU (other
    power and prices) and is not taken for "NVIDIA H200".

    Returns:
        {lowercased alias: GPU key}.
    Raises:
        ValueError: a missing column, an empty cell, a key that is not one of ``gpu_keys()``, or an alias listed twice
            (naming the file and line).
    """
    return _gpu_name_aliases(reference_dir() / GPU_ALIASES_CSV_NAME if path is None else path)


@functools.cache
def _gpu_name_aliases(path: Path) -> dict[str, str]:
    aliases: dict[str, str] = {}
    with open_text(path, "reference") as handle:
        reader = csv.DictReader(handle)
        if not {"alias", "hw"} <= set(reader.fieldnames or ()):
            raise ValueError(f"{path.name}: needs the columns alias and hw, has {reader.fieldnames}")
        for line, row in enumerate(reader, start=2):
            alias, hw = " ".join((row["alias"] or "").lower().split()), (row["hw"] or "").strip()
            if not alias or hw not in gpu_keys():
                raise ValueError(f"{path.name} line {line}: alias {row['alias']!r} -> hw {row['hw']!r}: "
                                 f"needs a name and one of {', '.join(gpu_keys())}")
            if alias in aliases:
                raise ValueError(f"{path.name} line {line}: alias {row['alias']!r} listed twice")
            aliases[alias] = hw
    return aliases


def normalize_precision(value: object) -> str | None:
    """Precision key: ``nvfp4``/``mxfp4`` → ``fp4``, ``bfloat16`` → ``bf16``; unknown values lowercased; empty → None."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if not text:
        return None
    return PRECISION_ALIASES.get(text, text)


def normalize_spec(value: object) -> str | None:
    """Spec-decoding key: ``none`` for off/empty/false, ``mtp``, ``eagle``, ``eagle3`` …; unknown values lowercased."""
    if value is None:
        return None
    text = str(value).strip().lower()
    return SPEC_ALIASES.get(text, text)


def normalize_framework(value: object) -> str | None:
    """Framework key, lowercased (``vllm``, ``sglang``, ``trtllm``, ``dynamo-trt`` …; ``trt`` → ``trtllm``);
    empty → None."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if not text:
        return None
    # InferenceX calls single-node TensorRT-LLM "trt"; its Dynamo variant stays "dynamo-trt".
    return {"trt": "trtllm", "trt-llm": "trtllm", "tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm"}.get(text, text)


def model_key_from_id(model_id: object) -> str | None:
    """A checkpoint's name from an engine's model id or path (``model_key`` maps it to the dashboard's key).

    ``zai-org/GLM-5-FP8`` → ``glm-5-fp8``; a Hugging Face cache path
    ``/root/.cache/huggingface/hub/models--openai--gpt-oss-120b/snapshots/<sha>`` → ``gpt-oss-120b``.
    """
    if model_id is None:
        return None
    text = str(model_id).strip().rstrip("/")
    if not text or text.lower() == "none":
        return None
    cache = re.search(r"models--[^/]+--([^/]+)", text)
    if cache:
        return cache.group(1).lower()
    return text.rsplit("/", 1)[-1].lower()


# InferenceX model keys (``infmax_model_prefix``, the dashboard's keys) of the checkpoint families its rows name:
# (pattern on the checkpoint's repository or folder name, lowercased, key). Checked in order.
_INFERENCEX_MODEL_KEYS = (
    (re.compile(r"^deepseek-r1"), "dsr1"),
    (re.compile(r"^gpt-oss-120b"), "gptoss"),
    (re.compile(r"^kimi-k2\.5"), "kimik2.5"),
    (re.compile(r"^kimi-k2\.7"), "kimik2.7"),
    (re.compile(r"^minimax-m2\.5"), "minimaxm2.5"),
    (re.compile(r"^qwen3\.5-397b-a17b"), "qwen3.5"),
    (re.compile(r"^glm-5\.1"), "glm5.1"),
    (re.compile(r"^glm-5(?![.\d])"), "glm5"),
)


def model_key(model_id: object) -> str | None:
    """The model key an engine's model id or path implies, in the dashboard's keys: every parser's engine-implied
    ``model`` (a stated ``model`` is kept as given), e.g. a vLLM file's ``model_id`` or an InferenceX row whose
    ``infmax_model_prefix`` is empty. The checkpoint's name (``model_key_from_id``: the part after the last slash,
    or the repository of a Hugging Face cache path) is matched against the known families, so that a Hugging Face
    id, a vendor's re-quantized copy and a cluster path of one model meet on one key.

    ``amd/Kimi-K2.5-MXFP4`` → ``kimik2.5``; ``/lustre/fsw/models/Kimi-K2.5-NVFP4`` → ``kimik2.5``;
    ``Qwen/Qwen3.5-397B-A17B-FP8`` → ``qwen3.5``; ``nvidia/DeepSeek-R1-0528-FP4`` → ``dsr1``. A checkpoint of no
    known family gets ``model_key_from_id``'s key (``Llama-3.1-70B`` → ``llama-3.1-70b``); None → None.
    """
    name = model_key_from_id(model_id)
    if name is None:
        return None
    for pattern, key in _INFERENCEX_MODEL_KEYS:
        if pattern.search(name):
            return key
    return name


def precision_from_model_id(model_id: object) -> str | None:
    """Precision a checkpoint's name states as its last dash-separated part (``amd/MiniMax-M2.5-MXFP4`` → ``fp4``,
    ``Qwen/Qwen3.5-397B-A17B-FP8`` → ``fp8``, ``/lustre/fsw/models/Kimi-K2.5-NVFP4`` → ``fp4``); None when the
    name ends in anything else (``openai/gpt-oss-120b``): the precision is then not guessed."""
    name = model_key_from_id(model_id)
    if name is None:
        return None
    suffix = name.rsplit("-", 1)[-1] if "-" in name else ""
    return PRECISION_ALIASES.get(suffix) if suffix in ("nvfp4", "mxfp4", "fp4", "fp8", "int4", "int8",
                                                       "awq", "bf16") else None


def normalize_kv_offload(value: object) -> str | None:
    """KV-cache offload key of an agentic run (InferenceX ``offloading`` / ``kv_offloading``): lowercased and
    stripped (``none``, ``lmcache``, ``hicache``, ``dram``); empty → None."""
    if value is None:
        return None
    text = str(value).strip().lower()
    return text or None


def normalize_model(value: object) -> str | None:
    """Model key: lowercased, surrounding space removed; empty → None."""
    if value is None:
        return None
    text = str(value).strip().lower()
    return text or None


def to_bool(value: object) -> bool | None:
    """``True``/``False`` from bools, 0/1 and the strings true/false/yes/no (any case); empty → None.

    Raises:
        ValueError: a value that is not a recognizable boolean.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "y", "t"):
        return True
    if text in ("false", "0", "no", "n", "f"):
        return False
    if text == "":
        return None
    raise ValueError(f"not a boolean: {value!r}")


def to_int(value: object) -> int | None:
    """Integer from an int, an integral float or a numeric string; empty → None.

    Raises:
        ValueError: non-integral or non-numeric values (``"abc"``, ``2.5``), or booleans.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or not value.is_integer():
            raise ValueError(f"not an integer: {value!r}")
        return int(value)
    text = str(value).strip()
    if text == "":
        return None
    number = float(text)
    if not number.is_integer():
        raise ValueError(f"not an integer: {value!r}")
    return int(number)


# The two date forms nearly every log writes, digit for digit: read with ``datetime`` directly, which skips
# ``strptime``'s format parsing (``strptime`` stays the reader of every other form, and of these when the fields are
# out of range).
_ISO_DAY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_VLLM_STAMP = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})-([0-9]{2})([0-9]{2})([0-9]{2})")


def vllm_timestamp(text: str) -> datetime:
    """vLLM's ``date`` field, ``YYYYMMDD-HHMMSS`` (local time, taken after the run; vllm/benchmarks/serve.py), as a
    naive datetime: ``datetime.strptime(text, "%Y%m%d-%H%M%S")``, with a fast path for the exact 8-6 digit form.

    Raises:
        ValueError: ``text`` is not in that form, or a field is out of range (month 13, second 60).
    """
    found = _exact_digits(_VLLM_STAMP, text)
    return found if found is not None else datetime.strptime(text, "%Y%m%d-%H%M%S")  # strptime's own message


def _exact_digits(form: re.Pattern, text: str) -> datetime | None:
    """``text`` read by ``datetime`` when it is exactly ``form`` (groups of digits: year, month, day[, hour,
    minute, second]) with every field in range, else None (the caller's ``strptime`` decides)."""
    match = form.fullmatch(text)
    if match is None:
        return None
    try:
        return datetime(*map(int, match.groups()))
    except ValueError:
        return None


def to_date(value: object) -> date | None:
    """Run date from ``YYYY-MM-DD``, vLLM's ``YYYYMMDD-HHMMSS``, or an ISO 8601 timestamp; empty → None.

    Raises:
        ValueError: a string in none of these forms.
    """
    if value is None or isinstance(value, date):
        return value
    text = str(value).strip()
    if not text:
        return None
    for form in (_ISO_DAY, _VLLM_STAMP):  # the first two formats below, when the digits fit
        found = _exact_digits(form, text)
        if found is not None:
            return found.date()
    for fmt in ("%Y-%m-%d", "%Y%m%d-%H%M%S", "%Y%m%d"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    return datetime.fromisoformat(text.replace("Z", "+00:00")).date()


# Display labels are plain, unescaped text (keys come from user-supplied files); each output medium escapes them
# where it writes them (docs/architecture.md, "Untrusted text at the output"). Upper-casing maps ASCII letters only:
# str.upper would give the keys "ß" and "ss" one label, "SS".
_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def hw_label(hw: str) -> str:
    """Display label of a GPU key (``mi355x`` → ``MI355X``): ASCII letters upper-cased, so two lowercase keys
    never share a label."""
    return hw.translate(_ASCII_UPPER)


def precision_label(precision: str) -> str:
    """Display label of a precision key (``fp4`` → ``FP4``): ASCII letters upper-cased, as ``hw_label``."""
    return precision.translate(_ASCII_UPPER)


def spec_label(spec: str) -> str:
    """Display label of a spec-decoding key as the seed pages write it (``none`` → ``Off``, ``mtp`` → ``MTP``):
    ASCII letters upper-cased, as ``hw_label`` (no key is ``off``: normalization makes it ``none``)."""
    return "Off" if spec == "none" else spec.translate(_ASCII_UPPER)


def framework_label(framework: str) -> str:
    """Display label of a framework key (``sglang`` → ``SGLang``, ``dynamo-trt`` → ``Dynamo TRT-LLM``)."""
    return FRAMEWORK_LABELS.get(framework, framework)
