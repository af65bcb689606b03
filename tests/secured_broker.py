"""A one-node KRaft Kafka from the same jars, with only secured listeners, for the tests of secured clusters.

Listeners on 127.0.0.1 (TEST_SASL_PORT, by default 2000 above TEST_KAFKA_BASE_PORT, so a second suite
with its own base port gets its own broker): SASL_PLAINTEXT on the port itself, its controller on the
next, SASL_SSL two above and SSL three above; the SSL listener requires a client certificate. Both
SASL listeners take SCRAM-SHA-256 and SCRAM-SHA-512 (users added at format time) and PLAIN. A CA made
for each start signs the broker's certificate (for 127.0.0.1 and localhost) and the client's.
KRaft's StandardAuthorizer checks every request: alice (by SASL or her certificate) and the broker
are super users, as is the anonymous principal of the PLAINTEXT controller listener (only the
broker's own controller client reaches it); anyone else needs ACLs.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from console.gateway.config import ClusterConfig
from tests import kafka_tools
from tests.support import BASE_PORT, ROOT, TEST_VAR, wait_for

SASL_PORT = int(os.environ.get("TEST_SASL_PORT") or BASE_PORT + 2000)
CONTROLLER_PORT = SASL_PORT + 1
SASL_SSL_PORT = SASL_PORT + 2
SSL_PORT = SASL_PORT + 3
USER, USER_PASSWORD = "alice", "secret-alice-pw"
BROKER_USER, BROKER_PASSWORD = "broker", "secret-broker-pw"
BROKER_KEY_PASSWORD, CLIENT_KEY_PASSWORD = "broker-key-pw", "client-key-pw"
DIR = TEST_VAR / "sasl-broker"
TLS = DIR / "tls"
PORTS = {"SASL_PLAINTEXT": SASL_PORT, "SASL_SSL": SASL_SSL_PORT, "SSL": SSL_PORT}
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
SUPER_USERS = (f"User:{BROKER_USER}", f"User:{USER}", f"User:CN={USER}", "User:ANONYMOUS")
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@dataclass(frozen=True)
class Tls:
    ca: Path
    client_certificate: Path
    client_key: Path


def broker_properties() -> str:
    scram = f'{SCRAM} required username="{BROKER_USER}" password="{BROKER_PASSWORD}";'
    plain = (f'{PLAIN} required username="{BROKER_USER}" password="{BROKER_PASSWORD}" '
             f'user_{BROKER_USER}="{BROKER_PASSWORD}" user_{USER}="{USER_PASSWORD}";')
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{CONTROLLER_PORT}",
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{SASL_PORT},CONTROLLER://127.0.0.1:{CONTROLLER_PORT},"
                     f"SASL_SSL://127.0.0.1:{SASL_SSL_PORT},SSL://127.0.0.1:{SSL_PORT}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{SASL_PORT},SASL_SSL://127.0.0.1:{SASL_SSL_PORT},"
                                f"SSL://127.0.0.1:{SSL_PORT}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain,
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(TLS / "broker.p12"),
        "ssl.keystore.password": BROKER_KEY_PASSWORD,
        "ssl.key.password": BROKER_KEY_PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(TLS / "ca.pem"),
        "listener.name.ssl.ssl.client.auth": "required",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": ";".join(SUPER_USERS),
        "log.dirs": str(DIR / "data"),
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "1",
        "num.io.threads": "2",
        "background.threads": "2",
        "log.cleaner.threads": "1",
        "num.recovery.threads.per.data.dir": "1",
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def make_tls(directory: Path) -> Tls:
    """A CA, the broker's keystore (PKCS#12: the JVM decrypts no key a PEM file holds encrypted) and a client certificate
    with its key in the traditional form, encrypted, in a file of its own (as librdkafka users keep them)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def certificate(name: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: ec.EllipticCurvePrivateKey,
                    ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-console test CA")])
    ca = certificate("kafka-console test CA", ca_key, ca_name, ca_key, ca=True)
    (directory / "ca.pem").write_bytes(ca.public_bytes(pem))
    broker_key = ec.generate_private_key(ec.SECP256R1())
    (directory / "broker.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", broker_key, certificate("broker", broker_key, ca_name, ca_key, ca=False), None,
        serialization.BestAvailableEncryption(BROKER_KEY_PASSWORD.encode())))
    client_key = ec.generate_private_key(ec.SECP256R1())
    (directory / "client.crt").write_bytes(certificate(USER, client_key, ca_name, ca_key, ca=False).public_bytes(pem))
    (directory / "client.key").write_bytes(client_key.private_bytes(
        pem, serialization.PrivateFormat.TraditionalOpenSSL, serialization.BestAvailableEncryption(CLIENT_KEY_PASSWORD.encode())))
    return Tls(directory / "ca.pem", directory / "client.crt", directory / "client.key")


def secured_cluster(name: str, protocol: str = "SASL_SSL", mechanism: str = "SCRAM-SHA-256",
                    password: str = USER_PASSWORD) -> ClusterConfig:
    """The console's settings for this broker through one of its listeners."""
    fields = {"name": name, "bootstrap_servers": f"127.0.0.1:{PORTS[protocol]}", "security_protocol": protocol}
    if protocol.startswith("SASL_"):
        fields.update(sasl_mechanism=mechanism, sasl_username=USER, sasl_password=password)
    if protocol.endswith("SSL"):
        fields.update(ssl_ca_location=str(TLS / "ca.pem"))
    if protocol == "SSL":
        fields.update(ssl_certificate_location=str(TLS / "client.crt"), ssl_key_location=str(TLS / "client.key"),
                      ssl_key_password=CLIENT_KEY_PASSWORD)
    return ClusterConfig(**fields)  # type: ignore[arg-type]


def client_properties(password: str) -> Path:
    """A --command-config file for Kafka's own tools (the oracle), as the given user over SASL_PLAINTEXT."""
    path = DIR / f"client-{password}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        f'sasl.jaas.config={SCRAM} required username="{USER}" password="{password}";\n'
    )
    return path


def tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return kafka_tools.run(name, "--bootstrap-server", f"127.0.0.1:{SASL_PORT}", *args)


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Kafka binds: a TIME_WAIT left by the last run is fine
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def running_secured_broker() -> Iterator[Tls]:
    """The broker, from empty data, until alice can list its topics; stopped when the block ends."""
    for port in (SASL_PORT, CONTROLLER_PORT, SASL_SSL_PORT, SSL_PORT):
        if not port_is_free(port):
            raise AssertionError(f"port {port} is taken: set TEST_SASL_PORT to a free region for the SASL test broker")
    shutil.rmtree(DIR, ignore_errors=True)
    (DIR / "data").mkdir(parents=True)
    tls = make_tls(TLS)
    (DIR / "server.properties").write_text(broker_properties())
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    formatted = subprocess.run(
        [str(ROOT / "kafka" / "bin" / "kafka-storage"), "format", f"--cluster-id={cluster_id}", "-c", str(DIR / "server.properties"),
         "--add-scram", f"SCRAM-SHA-256=[name={BROKER_USER},password={BROKER_PASSWORD}]",
         "--add-scram", f"SCRAM-SHA-256=[name={USER},password={USER_PASSWORD}]",
         "--add-scram", f"SCRAM-SHA-512=[name={USER},password={USER_PASSWORD}]"],
        capture_output=True, text=True, timeout=120,
    )
    assert formatted.returncode == 0, formatted.stderr or formatted.stdout
    with open(DIR / "server.log", "wb") as log:
        proc = subprocess.Popen(
            ["java", f"-Xmx{os.environ.get('TEST_SASL_BROKER_HEAP', '256m')}", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
             f"-Dlog4j2.configurationFile={ROOT / 'kafka' / 'log4j2.properties'}", "-Dkafka.root.level=WARN",
             "-cp", str(ROOT / "kafka" / "lib" / "*"), "kafka.Kafka", str(DIR / "server.properties")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    try:
        config = client_properties(USER_PASSWORD)

        def ready() -> bool:
            assert proc.poll() is None, f"the SASL broker exited; see {DIR / 'server.log'}"
            return tool("kafka-topics", "--command-config", str(config), "--list").returncode == 0

        wait_for(ready, 120, interval=1, what="the SASL test broker to accept alice")
        yield tls
    finally:
        proc.kill()  # (its data is thrown away: no clean shutdown to wait for)
        proc.wait(10)
