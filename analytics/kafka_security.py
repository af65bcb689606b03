"""A cluster's security settings as options of Spark's Kafka connector; no Django.

The console keeps a cluster's settings in librdkafka's terms (console/gateway/config.py); Spark's
connector takes the Java client's, each prefixed with "kafka.". `connector_options` maps one to the
other and touches nothing; `spark_options` adds the one step that needs a file (the Java client
reads a client certificate and its key from one keystore). Paths are handed on as they are: with a
Spark cluster on other hosts, the CA file must exist at the same path on every worker.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from secrets import token_urlsafe
from typing import Protocol

LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MASK = "***"
# A password's value after its name, as a JAAS line, a Python or Java map or a properties line shows it.
_NAMED_PASSWORD = re.compile(r"""(password['"]?\s*(?:=|:|->)\s*)(?:"(?:[^"\\]|\\.)*"|'[^']*'|\[[^\]]*\]|[^\s,;})\]]+)""", re.IGNORECASE)
_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


class SecuritySettings(Protocol):
    """What analytics reads of a cluster's settings (console.gateway.config.ClusterConfig has it all)."""

    @property
    def name(self) -> str: ...
    @property
    def security_protocol(self) -> str: ...
    @property
    def sasl_mechanism(self) -> str: ...
    @property
    def sasl_username(self) -> str: ...
    @property
    def sasl_password(self) -> str: ...
    @property
    def ssl_ca_location(self) -> str: ...
    @property
    def ssl_certificate_location(self) -> str: ...
    @property
    def ssl_key_location(self) -> str: ...
    @property
    def ssl_key_password(self) -> str: ...


@dataclass(frozen=True)
class Keystore:
    """A PKCS#12 file with the client's certificates and its key, encrypted with `password`."""

    location: str
    password: str = field(repr=False)


class SecurityOptionsError(ValueError):
    """A cluster's security settings that Spark's Kafka connector cannot use, said in a sentence."""


def connector_options(cluster: SecuritySettings, keystore: Keystore | None = None) -> dict[str, str]:
    """The connector options that connect to `cluster` as the console does (bootstrap servers aside).

    `keystore` holds the client certificate and key of a cluster that has them (`spark_options` writes it).
    """
    protocol = (cluster.security_protocol or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise SecurityOptionsError(f"Cluster '{cluster.name}': security_protocol {cluster.security_protocol!r} is not one of "
                                   f"{', '.join(PROTOCOLS)}.")
    options = {"kafka.security.protocol": protocol}
    if protocol.startswith("SASL_"):
        options.update(_sasl(cluster))
    if protocol.endswith("SSL"):
        options.update(_ssl(cluster, keystore))
    return options


def _sasl(cluster: SecuritySettings) -> dict[str, str]:
    mechanism = (cluster.sasl_mechanism or "").upper()
    if mechanism not in LOGIN_MODULES:
        # (librdkafka's default mechanism is GSSAPI, which analytics cannot log in with either)
        given = f"sasl_mechanism {cluster.sasl_mechanism!r}" if cluster.sasl_mechanism else "no sasl_mechanism"
        raise SecurityOptionsError(f"Cluster '{cluster.name}' has {given}: analytics reads over SASL with "
                                   f"{', '.join(LOGIN_MODULES)} only.")
    if not cluster.sasl_username:
        raise SecurityOptionsError(f"Cluster '{cluster.name}' uses {mechanism} without a sasl_username: analytics cannot log in.")
    jaas = (f'{LOGIN_MODULES[mechanism]} required username="{jaas_quoted(cluster.sasl_username)}" '
            f'password="{jaas_quoted(cluster.sasl_password)}";')
    return {"kafka.sasl.mechanism": mechanism, "kafka.sasl.jaas.config": jaas}


def _ssl(cluster: SecuritySettings, keystore: Keystore | None) -> dict[str, str]:
    options = {}
    if cluster.ssl_ca_location:
        options["kafka.ssl.truststore.type"] = "PEM"
        options["kafka.ssl.truststore.location"] = cluster.ssl_ca_location
    cert, key = cluster.ssl_certificate_location, cluster.ssl_key_location
    if not (cert or key):
        return options
    if not (cert and key):
        raise SecurityOptionsError(f"Cluster '{cluster.name}' has ssl_certificate_location or ssl_key_location without the "
                                   "other: a client certificate needs both.")
    if keystore is None:
        raise SecurityOptionsError(f"Cluster '{cluster.name}': Spark's Kafka client reads a client certificate and its "
                                   "key from one keystore (analytics.kafka_security.spark_options writes it).")
    options["kafka.ssl.keystore.type"] = "PKCS12"
    options["kafka.ssl.keystore.location"] = keystore.location
    options["kafka.ssl.keystore.password"] = keystore.password
    options["kafka.ssl.key.password"] = keystore.password
    return options


def jaas_quoted(value: str) -> str:
    """`value` inside a JAAS quoted string: Kafka's JAAS parser reads backslash escapes there."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def secrets_of(cluster: SecuritySettings, options: dict[str, str] | None = None) -> list[str]:
    """The cluster's passwords (and a keystore's in `options`), as given and as quoted in a JAAS line,
    each also as Python's repr and JSON escape it (an exception may show the options as a dict)."""
    passwords = [cluster.sasl_password, cluster.ssl_key_password, *(v for k, v in (options or {}).items() if k.endswith("password"))]
    found = {e for p in passwords if p for q in (p, jaas_quoted(p)) for e in (q, repr(q)[1:-1], json.dumps(q)[1:-1])}
    return sorted(found, key=len, reverse=True)


def masked(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret, and every value named password, shown as ***: an exception that
    echoes the connector's options must not put a password into a log or a run's error."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return _NAMED_PASSWORD.sub(rf"\g<1>{MASK}", text)


@contextmanager
def spark_options(cluster: SecuritySettings) -> Iterator[dict[str, str]]:
    """`connector_options` of `cluster`; for a client certificate, its key and certificates in one
    file, private to this user and removed when the block ends.

    librdkafka reads the PEM files the console is given; the Java client reads a PEM keystore file
    only with its key encrypted, and the JVM decrypts none of the PKCS#8 encryptions a current
    OpenSSL writes (PBES2). So the key and certificates go into a PKCS#12 file, encrypted with
    ssl_key_password, or with a random password for this run when the key has none."""
    protocol = (cluster.security_protocol or "").upper()
    if not (protocol.endswith("SSL") and cluster.ssl_certificate_location and cluster.ssl_key_location):
        yield connector_options(cluster)
        return
    with tempfile.TemporaryDirectory(prefix="kafka-console-keystore-") as directory:
        path = Path(directory) / "client.p12"
        password = cluster.ssl_key_password or token_urlsafe(24)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(client_keystore(cluster, password))
        yield connector_options(cluster, Keystore(str(path), password))


def client_keystore(cluster: SecuritySettings, password: str) -> bytes:
    """The client key and the certificate file's certificates (its own first) as PKCS#12, encrypted with `password`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12

    cert_path, key_path = cluster.ssl_certificate_location, cluster.ssl_key_location
    try:
        certificates = _CERTIFICATE.findall(Path(cert_path).read_bytes())
        key_pem = Path(key_path).read_bytes()
    except OSError as exc:
        raise SecurityOptionsError(f"Cluster '{cluster.name}': cannot read {exc.filename}: {exc.strerror}.") from None
    if not certificates:
        raise SecurityOptionsError(f"Cluster '{cluster.name}': {cert_path} holds no PEM certificate.")
    try:
        key = serialization.load_pem_private_key(key_pem, cluster.ssl_key_password.encode() or None)
    except (ValueError, TypeError):
        raise SecurityOptionsError(f"Cluster '{cluster.name}': {key_path} is not a PEM private key that ssl_key_password "
                                   "opens.") from None
    try:
        own, *chain = [x509.load_pem_x509_certificate(c) for c in certificates]
    except ValueError:
        raise SecurityOptionsError(f"Cluster '{cluster.name}': {cert_path} holds a certificate that cannot be read.") from None
    if not isinstance(key, (rsa.RSAPrivateKey, dsa.DSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey,
                            ed448.Ed448PrivateKey)):
        raise SecurityOptionsError(f"Cluster '{cluster.name}': {key_path} holds a kind of key a keystore cannot hold.")
    return pkcs12.serialize_key_and_certificates(b"client", key, own, chain or None,
                                                 serialization.BestAvailableEncryption(password.encode()))
