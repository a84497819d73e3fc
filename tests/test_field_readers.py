"""Values of the parsers' shared field readers (``pipeline.ingest.parsers.base``): every reason code and detail
written out by hand."""

import math
from datetime import datetime

import pytest

from pipeline.ingest.keys import to_date, vllm_timestamp
from pipeline.ingest.parsers.base import (
    FieldError,
    input_throughput,
    integer,
    number,
    section,
)


@pytest.mark.parametrize("text, expected", [("inf", math.inf), (" Infinity ", math.inf), ("INFINITY", math.inf),
                                            ("-inf", -math.inf), ("\tInf\n", math.inf)])
def test_number_reads_the_infinity_words(text, expected):
    assert number({"v": text}, "v") == expected


def test_number_reads_nan_in_any_case():
    assert math.isnan(number({"v": " NaN "}, "v")) and math.isnan(number({"v": "nan"}, "v"))


def test_number_keeps_a_float_as_it_is_and_converts_an_int():
    assert number({"v": -0.0}, "v") == 0.0 and math.copysign(1, number({"v": -0.0}, "v")) == -1
    value = number({"v": 2**53 + 1}, "v")
    assert type(value) is float and value == float(2**53)  # the nearest double, as float() gives it


def test_an_integer_beyond_the_float_range_names_its_digits():
    with pytest.raises(FieldError) as err:
        number({"v": 10**400}, "v")
    assert err.value.reason_code == "int_out_of_range:v"
    assert err.value.detail == "field 'v': an integer of 401 digits, beyond the float range"
    with pytest.raises(FieldError) as err:
        number({"v": -(10**309)}, "v", label="metrics.duration")
    assert err.value.reason_code == "int_out_of_range:metrics.duration"
    assert err.value.detail == "field 'metrics.duration': an integer of 310 digits, beyond the float range"


def test_integer_accepts_both_ends_of_int64_and_nothing_beyond():
    assert integer({"n": -(2**63)}, "n") == -(2**63)
    assert integer({"n": 2**63 - 1}, "n") == 2**63 - 1
    for beyond, shown in ((-(2**63) - 1, "-9.223e+18"), (2**63, "9.223e+18"), (1e30, "1e+30")):
        with pytest.raises(FieldError) as err:
            integer({"n": beyond}, "n", label="completed")
        assert err.value.reason_code == "int_out_of_range:completed"
        assert err.value.detail == f"field 'completed': {shown} is outside the int64 range"


@pytest.mark.parametrize("value, kind", [([1], "list"), ("x", "str"), (3, "int"), (True, "bool")])
def test_section_that_is_not_an_object(value, kind):
    with pytest.raises(FieldError) as err:
        section({"s": value}, "s", label="metrics.s")
    assert err.value.reason_code == "not_an_object:metrics.s"
    assert err.value.detail == f"field 'metrics.s': expected an object, got {kind}"


def test_section_absent_null_or_object():
    assert section({}, "s") == {} and section({"s": None}, "s") == {} and section({"s": {"a": 1}}, "s") == {"a": 1}


@pytest.mark.parametrize("total, output, expected", [(1000.0, 250.0, 750.0), (0.5, 0.75, -0.25), (None, 1.0, None),
                                                     (1.0, None, None), (None, None, None)])
def test_input_throughput_is_total_minus_output(total, output, expected):
    assert input_throughput(total, output) == expected


# The fast paths of the date readers (exact-width digits read with ``datetime`` directly) must agree with the
# standard library's strptime on every input, valid or not: the grid covers out-of-range months, days, hours,
# minutes and seconds (60 and 61, which strptime's pattern accepts and datetime refuses), padding and other forms.
def _strptime_date(text: str):
    text = text.strip()
    for fmt in ("%Y-%m-%d", "%Y%m%d-%H%M%S", "%Y%m%d"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            pass
    return datetime.fromisoformat(text.replace("Z", "+00:00")).date()


def _outcome(read, text):
    try:
        return "ok", read(text)
    except ValueError:
        return "ValueError", None


_DATE_GRID = [f"{y}-{m}-{d}" for y in ("2024", "0001", "9999") for m in ("00", "01", "02", "12", "13")
              for d in ("00", "01", "29", "30", "31", "32")] + [
    f"{y}{m}{d}-{hms}" for y in ("2024", "0001") for m in ("00", "02", "12", "13") for d in ("00", "29", "31")
    for hms in ("000000", "235959", "240000", "236000", "235960", "235961")] + [
    " 2024-01-05 ", "2024-1-5", "20240105", "2024-01-05T10:00:00Z", "2024-01-05T23:30:00-05:00", "٢٠٢٤-٠١-٠٥",
    "20240105-1234567", "2024-01-055"]


def test_to_date_agrees_with_strptime():
    differ = [t for t in _DATE_GRID if _outcome(to_date, t) != _outcome(_strptime_date, t)]
    assert not differ, differ


def test_vllm_timestamp_agrees_with_strptime():
    def reference(text):
        return datetime.strptime(text, "%Y%m%d-%H%M%S")

    differ = [t for t in _DATE_GRID if _outcome(vllm_timestamp, t) != _outcome(reference, t)]
    assert not differ, differ
    assert vllm_timestamp("20240105-123456") == datetime(2024, 1, 5, 12, 34, 56)
