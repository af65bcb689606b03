"""topics_app.decoding.decode: payloads rendered for display as JSON, text, MessagePack, hex or base64."""

from __future__ import annotations

import json
import random

import msgpack
import pytest
from django.utils.safestring import SafeData

from console.errors import BadParameter
from topics_app.decoding import DECODINGS, decode

# auto --------------------------------------------------------------------------------------------


def test_auto_shows_json_pretty_printed_with_a_two_space_indent():
    shown = decode(b'{"order": {"id": 7, "items": ["a"]}}', "auto")
    assert shown.format == "json"
    assert shown.json == {"order": {"id": 7, "items": ["a"]}}
    assert shown.text == '{\n  "order": {\n    "id": 7,\n    "items": [\n      "a"\n    ]\n  }\n}'
    assert shown.error is None


def test_auto_keeps_non_ascii_characters_of_json_readable():
    assert decode('{"city": "Zürich"}'.encode(), "auto").text == '{\n  "city": "Zürich"\n}'


def test_auto_shows_printable_utf8_as_text():
    shown = decode("hello wörld".encode(), "auto")
    assert (shown.format, shown.text, shown.json, shown.error) == ("text", "hello wörld", None, None)


def test_auto_treats_newlines_and_tabs_as_text():
    assert decode(b"line 1\n\tline 2\r\n", "auto").format == "text"


@pytest.mark.parametrize("data", [b"abc\x00def", b"\x1b[31mred", b"bell\x07"])
def test_auto_shows_text_with_control_characters_as_hex(data):
    shown = decode(data, "auto")
    assert shown.format == "hex"
    assert shown.text == data.hex(" ")


def test_auto_shows_invalid_utf8_as_hex():
    shown = decode(b"\xff\xfe\x00\x01", "auto")
    assert (shown.format, shown.text) == ("hex", "ff fe 00 01")


def test_auto_shows_a_messagepack_map_as_json():
    shown = decode(msgpack.packb({"id": 7, "tags": ["x", "y"]}), "auto")
    assert shown.format == "msgpack"
    assert shown.json == {"id": 7, "tags": ["x", "y"]}
    assert json.loads(shown.text) == shown.json


def test_auto_does_not_take_a_messagepack_scalar_for_messagepack():
    # 0xcc 0xff is the MessagePack for 255, but a lone number is more likely just binary.
    assert decode(b"\xcc\xff", "auto").format == "hex"


def test_auto_prefers_json_to_text_for_a_bare_json_number():
    assert decode(b"42", "auto").format == "json"


def test_empty_payload_is_empty_text():
    assert decode(b"", "auto") == decode(b"", "text")
    assert decode(b"", "auto").text == ""


def test_missing_payload_is_null():
    shown = decode(None, "json")
    assert (shown.format, shown.text, shown.json, shown.error) == ("null", "", None, None)


# forced decodings ---------------------------------------------------------------------------------


def test_text_of_invalid_utf8_falls_back_to_hex_saying_why():
    shown = decode(b"ok\xff", "text")
    assert shown.format == "hex"
    assert shown.text == "6f 6b ff"
    assert shown.error == "not valid UTF-8; shown as hex"


def test_json_of_plain_text_falls_back_to_text_saying_why():
    shown = decode(b"not json", "json")
    assert shown.format == "text"
    assert shown.text == "not json"
    assert shown.error is not None and shown.error.startswith("not valid JSON")


def test_json_of_binary_falls_back_to_hex():
    shown = decode(b"\x00\xff", "json")
    assert shown.format == "hex"
    assert shown.error is not None and "not valid UTF-8" in shown.error


@pytest.mark.parametrize("data", [b"NaN", b'{"x": Infinity}', b"[-Infinity]"])
def test_json_refuses_the_non_standard_constants(data):
    assert decode(data, "json").format == "text"


def test_hex_shows_every_byte_separated_by_spaces():
    assert decode(b"\x00\x10\xff", "hex").text == "00 10 ff"


def test_hex_of_valid_json_is_still_hex():
    assert decode(b"{}", "hex").format == "hex"


def test_base64_encodes_the_bytes():
    assert decode(b"\x00\xffhi", "base64").text == "AP9oaQ=="


def test_messagepack_binary_extension_and_non_string_keys_become_json():
    data = msgpack.packb({"blob": b"\x00\x01", 1: [1.5, float("nan")], "ext": msgpack.ExtType(5, b"\xaa")}, use_bin_type=True)
    shown = decode(data, "msgpack")
    assert shown.format == "msgpack"
    assert shown.json == {"blob": "base64:AAE=", "1": [1.5, "nan"], "ext": {"$ext": 5, "data": "qg=="}}


def test_messagepack_of_garbage_falls_back_to_hex_saying_why():
    shown = decode(b"\xc1", "msgpack")  # 0xc1 is never used in MessagePack
    assert shown.format == "hex"
    assert shown.error == "not valid MessagePack; shown as hex"


def test_messagepack_with_trailing_bytes_is_not_messagepack():
    assert decode(msgpack.packb([1]) + b"\x01", "msgpack").format == "hex"


# safety ------------------------------------------------------------------------------------------


def test_markup_is_returned_as_plain_text_never_marked_safe():
    markup = b"<script>alert('x')</script><b>bold</b>"
    for as_ in DECODINGS:
        shown = decode(markup, as_)
        assert not isinstance(shown.text, SafeData)
    assert decode(markup, "auto").text == markup.decode()


def test_json_string_holding_markup_keeps_it_verbatim():
    assert decode(b'{"html": "<img src=x onerror=alert(1)>"}', "json").json == {"html": "<img src=x onerror=alert(1)>"}


def test_json_with_a_lone_surrogate_escape_is_shown_as_encodable_text():
    shown = decode(b'{"s": "\\ud800"}', "json")
    assert shown.format == "json"
    shown.text.encode("utf-8")  # would raise UnicodeEncodeError for a lone surrogate


def test_deeply_nested_json_is_shown_without_an_error():
    shown = decode(b"[" * 100_000 + b"]" * 100_000, "auto")
    assert shown.format in {"text", "json"}


@pytest.mark.parametrize("as_", DECODINGS)
def test_random_binary_never_breaks_any_decoding(as_):
    rng = random.Random(as_)
    for _ in range(300):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
        shown = decode(data, as_)
        assert isinstance(shown.text, str)
        shown.text.encode("utf-8")


def test_unknown_decoding_is_a_bad_parameter_naming_it():
    with pytest.raises(BadParameter) as raised:
        decode(b"x", "yaml")
    assert "'decode'" in raised.value.message
    assert "yaml" in raised.value.message
