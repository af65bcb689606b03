"""console.params: query parameters parsed into typed values, or BadParameter naming the parameter."""

from __future__ import annotations

import pytest

from console.errors import BadParameter
from console.params import bool_param, choice_param, int_param, topic_param

# int_param --------------------------------------------------------------------------------------


def test_int_param_parses_a_whole_number():
    assert int_param({"page": "42"}, "page") == 42


def test_int_param_parses_a_negative_number_without_bounds():
    assert int_param({"delta": "-3"}, "delta") == -3


@pytest.mark.parametrize("params", [{}, {"page": ""}])
def test_int_param_missing_or_empty_gives_the_default(params):
    assert int_param(params, "page", 7) == 7
    assert int_param(params, "page") is None


def test_int_param_default_is_not_checked_against_the_minimum():
    assert int_param({}, "page", 0, minimum=1) == 0


@pytest.mark.parametrize("raw", ["abc", "1.5", "12abc", "0x10", "ten"])
def test_int_param_not_a_whole_number_raises_bad_parameter_naming_it(raw):
    with pytest.raises(BadParameter) as raised:
        int_param({"page": raw}, "page")
    assert "'page'" in raised.value.message
    assert "whole number" in raised.value.message
    assert raw in raised.value.message


def test_int_param_error_quotes_at_most_fifty_characters_of_the_value():
    with pytest.raises(BadParameter) as raised:
        int_param({"page": "x" * 500}, "page")
    assert "x" * 50 in raised.value.message
    assert "x" * 51 not in raised.value.message


def test_int_param_with_thousands_of_digits_raises_bad_parameter_not_a_crash():
    with pytest.raises(BadParameter):
        int_param({"page": "9" * 5000}, "page")


def test_int_param_below_minimum_raises_bad_parameter_naming_it_and_the_bound():
    with pytest.raises(BadParameter) as raised:
        int_param({"limit": "0"}, "limit", minimum=1)
    assert raised.value.message == "'limit' must be at least 1, not 0."


def test_int_param_above_maximum_raises_bad_parameter_naming_it_and_the_bound():
    with pytest.raises(BadParameter) as raised:
        int_param({"limit": "1001"}, "limit", minimum=1, maximum=1000)
    assert raised.value.message == "'limit' must be at most 1000, not 1001."


@pytest.mark.parametrize("raw", ["1", "1000"])
def test_int_param_accepts_values_on_the_bounds(raw):
    assert int_param({"limit": raw}, "limit", minimum=1, maximum=1000) == int(raw)


def test_bad_parameter_answers_http_400():
    with pytest.raises(BadParameter) as raised:
        int_param({"page": "x"}, "page")
    assert raised.value.http_status == 400
    assert str(raised.value) == raised.value.message


# bool_param -------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "Yes", "on", " true "])
def test_bool_param_true_words_give_true(raw):
    assert bool_param({"internal": raw}, "internal") is True


@pytest.mark.parametrize("raw", ["0", "false", "False", "no", "OFF"])
def test_bool_param_false_words_give_false(raw):
    assert bool_param({"internal": raw}, "internal", default=True) is False


@pytest.mark.parametrize("params", [{}, {"internal": ""}, {"internal": "   "}])
def test_bool_param_missing_or_blank_gives_the_default(params):
    assert bool_param(params, "internal") is False
    assert bool_param(params, "internal", default=True) is True


@pytest.mark.parametrize("raw", ["maybe", "2", "y", "t"])
def test_bool_param_other_values_raise_bad_parameter_naming_it(raw):
    with pytest.raises(BadParameter) as raised:
        bool_param({"internal": raw}, "internal")
    assert "'internal'" in raised.value.message
    assert "true or false" in raised.value.message


# choice_param -----------------------------------------------------------------------------------

KINDS = {"broker_down": "Broker down", "leader_change": "Leader change"}


def test_choice_param_accepts_a_known_choice():
    assert choice_param({"kind": "leader_change"}, "kind", KINDS) == "leader_change"


def test_choice_param_accepts_a_set_of_choices():
    assert choice_param({"kind": "b"}, "kind", {"a", "b"}) == "b"


@pytest.mark.parametrize("params", [{}, {"kind": ""}])
def test_choice_param_missing_or_empty_gives_none(params):
    assert choice_param(params, "kind", KINDS) is None


@pytest.mark.parametrize("raw", ["unknown", "Broker down", "BROKER_DOWN", " broker_down"])
def test_choice_param_unknown_choice_raises_bad_parameter_listing_the_choices(raw):
    with pytest.raises(BadParameter) as raised:
        choice_param({"kind": raw}, "kind", KINDS)
    message = raised.value.message
    assert "'kind'" in message
    assert "broker_down, leader_change" in message


# topic_param ------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["orders", "__consumer_offsets", "a.b-c_D9", "x" * 249])
def test_topic_param_accepts_valid_topic_names(raw):
    assert topic_param({"topic": raw}, "topic") == raw


@pytest.mark.parametrize("params", [{}, {"topic": ""}])
def test_topic_param_missing_or_empty_gives_none(params):
    assert topic_param(params, "topic") is None


@pytest.mark.parametrize("raw", ["orders/1", "has space", "x" * 250, "ünïcode", "a*", "<script>"])
def test_topic_param_invalid_name_raises_bad_parameter_naming_it(raw):
    with pytest.raises(BadParameter) as raised:
        topic_param({"topic": raw}, "topic")
    assert "'topic'" in raised.value.message
    assert "not a valid topic name" in raised.value.message


def test_topic_param_name_with_a_trailing_newline_raises_bad_parameter():
    with pytest.raises(BadParameter):
        topic_param({"topic": "orders\n"}, "topic")


def test_regex_list_search_gives_up_on_a_catastrophic_pattern_with_a_bad_parameter():
    import time

    from console.errors import BadParameter
    from console.listing import search

    rows = [{"name": "orders"}, {"name": "a" * 60 + "!"}]
    assert search(rows, "name", "^ord", True) == [{"name": "orders"}]
    started = time.monotonic()
    with pytest.raises(BadParameter) as raised:
        search(rows, "name", "(a|aa)+$", True)
    # (without the limit this search runs for days; under a loaded machine's full suite the 1 s limit took 5.4 s)
    assert time.monotonic() - started < 30
    assert "'q'" in raised.value.message and "took longer than 1 s" in raised.value.message
