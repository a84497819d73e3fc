"""Values of the parsers' shared field readers (``pipeline.ingest.parsers.base``): every reason code and detail
written out by hand."""

import math

import pytest

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
