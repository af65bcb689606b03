"""A cluster's security settings become the options Spark's Kafka connector takes, for each protocol;
passwords never show in text meant for people."""

from __future__ import annotations

import datetime
import os
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from analytics.kafka_security import (
    Keystore,
    SecurityOptionsError,
    connector_options,
    masked,
    secrets_of,
    spark_options,
)
from console.gateway.config import ClusterConfig

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def cluster(**fields: str) -> ClusterConfig:
    return ClusterConfig(name="c1", bootstrap_servers="b:9093", **fields)  # type: ignore[arg-type]


def test_a_plaintext_cluster_gets_only_its_protocol() -> None:
    assert connector_options(cluster()) == {"kafka.security.protocol": "PLAINTEXT"}


def test_sasl_plaintext_with_scram_logs_in_with_the_scram_module() -> None:
    options = connector_options(cluster(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                                        sasl_username="alice", sasl_password="pw-1"))
    assert options == {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": f'{SCRAM} required username="alice" password="pw-1";',
    }


def test_sasl_ssl_with_scram_512_trusts_the_clusters_ca_as_pem() -> None:
    options = connector_options(cluster(security_protocol="sasl_ssl", sasl_mechanism="scram-sha-512", sasl_username="alice",
                                        sasl_password="pw-1", ssl_ca_location="/etc/kafka/ca.pem"))
    assert options == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": f'{SCRAM} required username="alice" password="pw-1";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
    }


def test_sasl_ssl_with_plain_logs_in_with_the_plain_module() -> None:
    options = connector_options(cluster(security_protocol="SASL_SSL", sasl_mechanism="PLAIN", sasl_username="bob",
                                        sasl_password="pw-2"))
    assert options == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": f'{PLAIN} required username="bob" password="pw-2";',
    }


def test_quotes_and_backslashes_in_a_user_or_password_are_escaped_for_jaas() -> None:
    options = connector_options(cluster(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username='a"b',
                                        sasl_password='p\\"; x'))
    assert options["kafka.sasl.jaas.config"] == f'{PLAIN} required username="a\\"b" password="p\\\\\\"; x";'


def test_ssl_with_a_ca_has_a_pem_truststore_and_no_sasl() -> None:
    assert connector_options(cluster(security_protocol="SSL", ssl_ca_location="/ca.pem", sasl_password="unused")) == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/ca.pem",
    }


def test_ssl_with_a_client_certificate_uses_the_written_keystore_and_its_password() -> None:
    settings = cluster(security_protocol="SSL", ssl_ca_location="/ca.pem", ssl_certificate_location="/me.crt",
                       ssl_key_location="/me.key", ssl_key_password="kpw")
    assert connector_options(settings, Keystore("/tmp/x/client.p12", "run-pw")) == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/ca.pem",
        "kafka.ssl.keystore.type": "PKCS12",
        "kafka.ssl.keystore.location": "/tmp/x/client.p12",
        "kafka.ssl.keystore.password": "run-pw",
        "kafka.ssl.key.password": "run-pw",
    }
    with pytest.raises(SecurityOptionsError, match="reads a client certificate and its key from one keystore"):
        connector_options(settings)


@pytest.mark.parametrize(("fields", "sentence"), [
    ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI", "sasl_username": "a"},
     "Cluster 'c1' has sasl_mechanism 'GSSAPI': analytics reads over SASL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 only."),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_username": "a"},
     "Cluster 'c1' has no sasl_mechanism: analytics reads over SASL with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 only."),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN"},
     "Cluster 'c1' uses PLAIN without a sasl_username: analytics cannot log in."),
    ({"security_protocol": "SSL", "ssl_certificate_location": "/me.crt"},
     "Cluster 'c1' has ssl_certificate_location or ssl_key_location without the other: a client certificate needs both."),
    ({"security_protocol": "TLS"}, "Cluster 'c1': security_protocol 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL."),
])
def test_settings_analytics_cannot_use_are_refused_in_a_sentence(fields: dict[str, str], sentence: str) -> None:
    with pytest.raises(SecurityOptionsError) as refused:
        connector_options(cluster(**fields))
    assert str(refused.value) == sentence


def test_an_error_echoing_the_options_shows_no_password() -> None:
    settings = cluster(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", sasl_username="alice",
                       sasl_password='s3"cret', ssl_key_password="keypw")
    options = connector_options(settings)
    text = f"Kafka refused {options} (key password keypw)"
    shown = masked(text, secrets_of(settings))
    assert "cret" not in shown and "keypw" not in shown
    assert 'username=\\"alice\\"' in shown or 'username="alice"' in shown
    # A password that is not the cluster's (the keystore's of a run, say) is masked wherever it is named.
    assert masked('... username="x" password="ot\\"her"; ...', []) == '... username="x" password=***; ...'
    assert masked("{'kafka.ssl.key.password': 'k1', 'b': 'c'}", []) == "{'kafka.ssl.key.password': ***, 'b': 'c'}"
    assert masked("Map(kafka.ssl.key.password -> k1, a -> b)", []) == "Map(kafka.ssl.key.password -> ***, a -> b)"
    assert masked("ssl.key.password = [hidden]\nssl.keystore.type = PEM", []) == "ssl.key.password = ***\nssl.keystore.type = PEM"


def _certificate_and_key(directory: Path, password: bytes | None) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    encryption = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    (directory / "me.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    # The traditional (not PKCS#8) form librdkafka reads and the Java client does not.
    (directory / "me.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                                         encryption))
    return directory / "me.crt", directory / "me.key"


@pytest.mark.parametrize("password", ["kpw", ""])
def test_a_certificate_and_key_become_one_private_encrypted_keystore_while_the_run_lasts(tmp_path: Path,
                                                                                             password: str) -> None:
    cert, key = _certificate_and_key(tmp_path, password.encode())
    settings = cluster(security_protocol="SSL", ssl_certificate_location=str(cert), ssl_key_location=str(key),
                       ssl_key_password=password)
    with spark_options(settings) as options:
        keystore = Path(options["kafka.ssl.keystore.location"])
        assert stat.S_IMODE(os.stat(keystore).st_mode) == 0o600
        # A keystore file needs a password: the key's own, or one made for the run.
        run_password = options["kafka.ssl.keystore.password"]
        assert options["kafka.ssl.key.password"] == run_password
        assert run_password == password if password else len(run_password) >= 24
        stored = pkcs12.load_pkcs12(keystore.read_bytes(), run_password.encode())
        assert stored.key is not None and stored.cert is not None
        assert stored.cert.certificate.public_bytes(serialization.Encoding.PEM) == cert.read_bytes()
        assert run_password in secrets_of(settings, options)
    assert not keystore.exists() and not keystore.parent.exists()


def test_a_key_the_password_does_not_open_is_refused_in_a_sentence(tmp_path: Path) -> None:
    cert, key = _certificate_and_key(tmp_path, b"kpw")
    settings = cluster(security_protocol="SSL", ssl_certificate_location=str(cert), ssl_key_location=str(key), ssl_key_password="no")
    with pytest.raises(SecurityOptionsError, match=r"me\.key is not a PEM private key that ssl_key_password opens"), \
            spark_options(settings):
        pass
    missing = cluster(security_protocol="SSL", ssl_certificate_location=str(tmp_path / "gone.crt"), ssl_key_location=str(key))
    with pytest.raises(SecurityOptionsError, match="cannot read .*gone.crt: No such file or directory"), spark_options(missing):
        pass
