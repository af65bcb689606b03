"""The console's checks of a SCRAM user change, each a sentence, before Kafka is asked."""

from __future__ import annotations

import pytest

from console.errors import BadParameter
from security_app.users import check_iterations, check_mechanism, check_name, check_password


@pytest.mark.parametrize(("check", "value", "sentence"), [
    (check_password, "short", "The password must be at least 8 characters long (the console's minimum: Kafka sets none"),
    (check_password, "x" * 1025, "at most 1024 characters"),
    (check_mechanism, "SCRAM-SHA-1", "Unknown SCRAM mechanism 'SCRAM-SHA-1'; Kafka's are SCRAM-SHA-256 and SCRAM-SHA-512."),
    (check_mechanism, "PLAIN", "Unknown SCRAM mechanism 'PLAIN'"),
    (check_iterations, 4095, "SCRAM iterations must be between 4096 and 16384 (Kafka's bounds), not 4095."),
    (check_iterations, 16385, "not 16385"),
    (check_name, "", "The user name is empty."),
    (check_name, "bob\n", "control character"),
    (check_name, " bob", "starts or ends with a space"),
    (check_name, "b" * 256, "at most 255"),
])
def test_bad_input_is_refused_with_a_sentence(check, value, sentence) -> None:  # noqa: ANN001
    with pytest.raises(BadParameter) as refused:
        check(value)
    assert sentence in refused.value.message


@pytest.mark.parametrize("name", ["bob", "svc/orders", "O'Brien \"<b>\"", "数据-用户", "a=b,c"])
def test_odd_but_typeable_names_are_accepted(name: str) -> None:
    assert check_name(name) == name


def test_good_values_pass() -> None:
    assert check_password("eight ch") == "eight ch"
    assert check_mechanism("SCRAM-SHA-512") == "SCRAM-SHA-512"
    assert check_iterations(4096) == 4096 and check_iterations(16384) == 16384
