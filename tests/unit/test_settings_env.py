"""console.env helpers and console.gateway.config.load_clusters: settings read from the environment."""

from __future__ import annotations

import json

import pytest

from console.env import SettingError, env_bool, env_float, env_int, env_list, env_pairs, env_str
from console.gateway.config import ClusterConfig, load_clusters, local_bootstrap

VAR = "CONSOLE_TEST_SETTING"
KAFKA_VARS = [
    "KAFKA_CLUSTERS_FILE",
    "KAFKA_BOOTSTRAP_SERVERS",
    "KAFKA_CLUSTER_NAME",
    "KAFKA_SECURITY_PROTOCOL",
    "KAFKA_SASL_MECHANISM",
    "KAFKA_SASL_USERNAME",
    "KAFKA_SASL_PASSWORD",
    "KAFKA_SSL_CA_LOCATION",
    "KAFKA_SSL_CERTIFICATE_LOCATION",
    "KAFKA_SSL_KEY_LOCATION",
    "KAFKA_SSL_KEY_PASSWORD",
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in [VAR, *KAFKA_VARS]:
        monkeypatch.delenv(name, raising=False)


# env_str ----------------------------------------------------------------------------------------


def test_env_str_reads_the_variable(monkeypatch):
    monkeypatch.setenv(VAR, "value")
    assert env_str(VAR, "default") == "value"


@pytest.mark.parametrize("value", [None, ""])
def test_env_str_unset_or_empty_gives_the_default(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv(VAR, value)
    assert env_str(VAR, "default") == "default"


# env_int ----------------------------------------------------------------------------------------


def test_env_int_reads_a_whole_number(monkeypatch):
    monkeypatch.setenv(VAR, "8080")
    assert env_int(VAR, 1) == 8080


@pytest.mark.parametrize("value", [None, ""])
def test_env_int_unset_or_empty_gives_the_default(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv(VAR, value)
    assert env_int(VAR, 5) == 5


@pytest.mark.parametrize("raw", ["abc", "1.5", "ten"])
def test_env_int_not_a_whole_number_raises_setting_error_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(SettingError, match=rf"{VAR} must be a whole number, not '{raw}'"):
        env_int(VAR, 1)


def test_env_int_below_minimum_raises_setting_error_naming_the_bound(monkeypatch):
    monkeypatch.setenv(VAR, "0")
    with pytest.raises(SettingError, match=rf"{VAR} must be at least 1, not 0"):
        env_int(VAR, 5, minimum=1)


def test_env_int_at_minimum_is_accepted(monkeypatch):
    monkeypatch.setenv(VAR, "1")
    assert env_int(VAR, 5, minimum=1) == 1


# env_float --------------------------------------------------------------------------------------


def test_env_float_reads_a_number(monkeypatch):
    monkeypatch.setenv(VAR, "2.5")
    assert env_float(VAR, 1.0) == 2.5


def test_env_float_unset_gives_the_default():
    assert env_float(VAR, 1.5) == 1.5


def test_env_float_not_a_number_raises_setting_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(VAR, "fast")
    with pytest.raises(SettingError, match=rf"{VAR} must be a number, not 'fast'"):
        env_float(VAR, 1.0)


def test_env_float_is_non_negative_by_default(monkeypatch):
    monkeypatch.setenv(VAR, "-0.5")
    with pytest.raises(SettingError, match=rf"{VAR} must be at least 0.0"):
        env_float(VAR, 1.0)


def test_env_float_below_a_given_minimum_raises_setting_error(monkeypatch):
    monkeypatch.setenv(VAR, "0.05")
    with pytest.raises(SettingError, match="at least 0.1"):
        env_float(VAR, 1.0, minimum=0.1)


# env_bool ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("TRUE", True), (" yes ", True), ("on", True),
                                               ("0", False), ("False", False), ("no", False), ("off", False)])
def test_env_bool_reads_true_and_false_words(monkeypatch, raw, expected):
    monkeypatch.setenv(VAR, raw)
    assert env_bool(VAR, not expected) is expected


@pytest.mark.parametrize("value", [None, ""])
def test_env_bool_unset_or_empty_gives_the_default(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv(VAR, value)
    assert env_bool(VAR, True) is True
    assert env_bool(VAR, False) is False


def test_env_bool_other_values_raise_setting_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv(VAR, "perhaps")
    with pytest.raises(SettingError, match=rf"{VAR} must be true or false, not 'perhaps'"):
        env_bool(VAR, False)


# env_list ---------------------------------------------------------------------------------------


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv(VAR, " a, b ,,c , ")
    assert env_list(VAR, ["x"]) == ["a", "b", "c"]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_env_list_unset_or_blank_gives_a_copy_of_the_default(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv(VAR, value)
    default = ["x", "y"]
    result = env_list(VAR, default)
    assert result == ["x", "y"]
    result.append("z")
    assert default == ["x", "y"]



def test_env_pairs_reads_key_value_entries_whose_values_may_hold_spaces_and_equals(monkeypatch):
    monkeypatch.setenv(VAR, " spark.a=1 ; spark.opts=-Xmx1g -Dk=v;; ")
    assert env_pairs(VAR) == {"spark.a": "1", "spark.opts": "-Xmx1g -Dk=v"}


def test_env_pairs_unset_gives_none():
    assert env_pairs(VAR) == {}


@pytest.mark.parametrize("raw", ["spark.a", "=1", "spark.a=1;oops"])
def test_env_pairs_an_entry_without_a_key_and_value_raises_setting_error_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(SettingError, match=VAR):
        env_pairs(VAR)

# load_clusters: defaults and KAFKA_BOOTSTRAP_SERVERS --------------------------------------------


def test_without_configuration_there_is_one_local_cluster_on_the_dev_cluster_ports():
    clusters = load_clusters(39092)
    assert clusters == (
        ClusterConfig(name="local", bootstrap_servers="127.0.0.1:39092,127.0.0.1:39094,127.0.0.1:39096", local=True),
    )


def test_local_bootstrap_lists_every_other_port_from_the_base():
    assert local_bootstrap(9092, nodes=2) == "127.0.0.1:9092,127.0.0.1:9094"


def test_bootstrap_servers_variable_gives_one_cluster_named_main(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k1:9092,k2:9092")
    (cluster,) = load_clusters(39092)
    assert cluster.name == "main"
    assert cluster.bootstrap_servers == "k1:9092,k2:9092"
    assert cluster.security_protocol == "PLAINTEXT"
    assert cluster.local is False


def test_bootstrap_servers_variable_reads_name_protocol_and_credentials(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", " k1:9093 ")
    monkeypatch.setenv("KAFKA_CLUSTER_NAME", "prod")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "sasl_ssl")
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "alice")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "s3cret")
    (cluster,) = load_clusters(39092)
    assert cluster.name == "prod"
    assert cluster.bootstrap_servers == "k1:9093"
    assert cluster.security_protocol == "SASL_SSL"
    assert cluster.librdkafka() == {
        "bootstrap.servers": "k1:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "s3cret",
    }
    assert "s3cret" not in repr(cluster)


def test_bootstrap_servers_without_a_port_raise_setting_error(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k1:9092,k2")
    with pytest.raises(SettingError, match="KAFKA_\\* variables: bootstrap_servers must be host:port"):
        load_clusters(39092)


def test_bad_protocol_in_the_environment_raises_setting_error(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k1:9092")
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "TLS")
    with pytest.raises(SettingError, match="security_protocol must be one of"):
        load_clusters(39092)


def test_bad_cluster_name_in_the_environment_raises_setting_error(monkeypatch):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k1:9092")
    monkeypatch.setenv("KAFKA_CLUSTER_NAME", "my cluster")
    with pytest.raises(SettingError, match="cluster name 'my cluster'"):
        load_clusters(39092)


# load_clusters: KAFKA_CLUSTERS_FILE -------------------------------------------------------------


def clusters_file(monkeypatch, tmp_path, content) -> str:
    path = tmp_path / "clusters.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    monkeypatch.setenv("KAFKA_CLUSTERS_FILE", str(path))
    return str(path)


def test_clusters_file_defines_several_clusters(monkeypatch, tmp_path):
    clusters_file(monkeypatch, tmp_path, [
        {"name": "east", "bootstrap_servers": "e1:9092,e2:9092"},
        {"name": "west.2", "bootstrap_servers": "w1:9093", "security_protocol": "ssl", "ssl_ca_location": "/ca.pem"},
    ])
    east, west = load_clusters(39092)
    assert (east.name, east.bootstrap_servers, east.security_protocol) == ("east", "e1:9092,e2:9092", "PLAINTEXT")
    assert (west.name, west.security_protocol, west.ssl_ca_location) == ("west.2", "SSL", "/ca.pem")
    assert west.kafka_python() == {"bootstrap_servers": ["w1:9093"], "security_protocol": "SSL", "ssl_cafile": "/ca.pem"}


def test_clusters_file_wins_over_the_bootstrap_servers_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "ignored:9092")
    clusters_file(monkeypatch, tmp_path, [{"name": "east", "bootstrap_servers": "e1:9092"}])
    assert [c.name for c in load_clusters(39092)] == ["east"]


def test_clusters_file_may_mark_a_cluster_local(monkeypatch, tmp_path):
    clusters_file(monkeypatch, tmp_path, [{"name": "dev", "bootstrap_servers": "127.0.0.1:9092", "local": True}])
    assert load_clusters(39092)[0].local is True


def test_missing_clusters_file_raises_setting_error_naming_the_file(monkeypatch, tmp_path):
    path = str(tmp_path / "absent.json")
    monkeypatch.setenv("KAFKA_CLUSTERS_FILE", path)
    with pytest.raises(SettingError, match="cannot be read as JSON") as raised:
        load_clusters(39092)
    assert path in str(raised.value)


def test_clusters_file_with_bad_json_raises_setting_error_naming_the_file(monkeypatch, tmp_path):
    path = clusters_file(monkeypatch, tmp_path, '[{"name": "east",')
    with pytest.raises(SettingError, match="cannot be read as JSON") as raised:
        load_clusters(39092)
    assert path in str(raised.value)


@pytest.mark.parametrize("content", [[], {"name": "east", "bootstrap_servers": "e1:9092"}, "null"])
def test_clusters_file_not_holding_a_non_empty_list_raises_setting_error(monkeypatch, tmp_path, content):
    clusters_file(monkeypatch, tmp_path, content)
    with pytest.raises(SettingError, match="must hold a non-empty JSON list"):
        load_clusters(39092)


def test_clusters_file_with_unknown_keys_raises_setting_error_listing_them_and_the_allowed_ones(monkeypatch, tmp_path):
    path = clusters_file(monkeypatch, tmp_path, [
        {"name": "east", "bootstrap_servers": "e1:9092"},
        {"name": "west", "bootstrap_servers": "w1:9092", "bootstrap": "typo", "passwd": "x"},
    ])
    with pytest.raises(SettingError) as raised:
        load_clusters(39092)
    message = str(raised.value)
    assert f"{path}[1]" in message
    assert "unknown keys ['bootstrap', 'passwd']" in message
    assert "'bootstrap_servers'" in message


@pytest.mark.parametrize("name", ["", "-east", "has space", "x" * 65, "ü"])
def test_clusters_file_with_a_bad_cluster_name_raises_setting_error(monkeypatch, tmp_path, name):
    path = clusters_file(monkeypatch, tmp_path, [{"name": name, "bootstrap_servers": "e1:9092"}])
    with pytest.raises(SettingError, match="must be 1-64 letters, digits") as raised:
        load_clusters(39092)
    assert f"{path}[0]" in str(raised.value)


def test_clusters_file_entry_without_name_raises_setting_error(monkeypatch, tmp_path):
    clusters_file(monkeypatch, tmp_path, [{"bootstrap_servers": "e1:9092"}])
    with pytest.raises(SettingError, match="cluster name ''"):
        load_clusters(39092)


@pytest.mark.parametrize("servers", ["", "   ", "e1", "e1:9092,e2"])
def test_clusters_file_with_bad_bootstrap_servers_raises_setting_error(monkeypatch, tmp_path, servers):
    clusters_file(monkeypatch, tmp_path, [{"name": "east", "bootstrap_servers": servers}])
    with pytest.raises(SettingError, match="bootstrap_servers must be host:port"):
        load_clusters(39092)


def test_clusters_file_with_a_bad_protocol_raises_setting_error_listing_the_protocols(monkeypatch, tmp_path):
    path = clusters_file(monkeypatch, tmp_path, [{"name": "east", "bootstrap_servers": "e1:9092", "security_protocol": "TLS"}])
    with pytest.raises(SettingError) as raised:
        load_clusters(39092)
    message = str(raised.value)
    assert f"{path}[0]" in message
    assert "security_protocol must be one of" in message
    assert "SASL_SSL" in message and "PLAINTEXT" in message


def test_clusters_file_with_duplicate_names_raises_setting_error_listing_the_names(monkeypatch, tmp_path):
    clusters_file(monkeypatch, tmp_path, [
        {"name": "east", "bootstrap_servers": "e1:9092"},
        {"name": "west", "bootstrap_servers": "w1:9092"},
        {"name": "east", "bootstrap_servers": "e2:9092"},
    ])
    with pytest.raises(SettingError, match=r"cluster names must be unique, got \['east', 'west', 'east'\]"):
        load_clusters(39092)


@pytest.mark.parametrize("entry", [42, None])
def test_clusters_file_entry_that_is_not_an_object_raises_setting_error(monkeypatch, tmp_path, entry):
    clusters_file(monkeypatch, tmp_path, [entry])
    with pytest.raises(SettingError):
        load_clusters(39092)


def test_clusters_file_optional_key_given_as_null_is_treated_as_unset(monkeypatch, tmp_path):
    clusters_file(monkeypatch, tmp_path, [{"name": "east", "bootstrap_servers": "e1:9092", "sasl_mechanism": None}])
    (cluster,) = load_clusters(39092)
    assert "sasl.mechanism" not in cluster.librdkafka()


def test_a_cluster_declares_the_super_users_kafka_does_not_disclose(monkeypatch, tmp_path):
    clusters_file(monkeypatch, tmp_path, [
        {"name": "a", "bootstrap_servers": "a:9092", "super_users": "User:admin; User:CN=ops", "allow_everyone_if_no_acl_found": True},
        {"name": "b", "bootstrap_servers": "b:9092", "allow_everyone_if_no_acl_found": "false"},
    ])
    a, b = load_clusters(39092)
    assert a.super_user_set() == {"User:admin", "User:CN=ops"} and a.allow_everyone_if_no_acl_found is True
    assert b.super_user_set() == frozenset() and b.allow_everyone_if_no_acl_found is False
    clusters_file(monkeypatch, tmp_path, [{"name": "c", "bootstrap_servers": "c:9092", "allow_everyone_if_no_acl_found": "maybe"}])
    with pytest.raises(SettingError, match="allow_everyone_if_no_acl_found must be true or false"):
        load_clusters(39092)


def test_super_users_by_variables(monkeypatch):
    monkeypatch.delenv("KAFKA_CLUSTERS_FILE", raising=False)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "k:9092")
    monkeypatch.setenv("KAFKA_SUPER_USERS", "User:console")
    monkeypatch.setenv("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND", "true")
    (cluster,) = load_clusters(39092)
    assert cluster.super_user_set() == {"User:console"} and cluster.allow_everyone_if_no_acl_found
