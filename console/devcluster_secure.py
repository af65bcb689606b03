"""The secure mode of the local cluster (`SECURE=1 make run`, DEVCLUSTER_SECURE=1): TLS and SASL.

Each node's client port takes SASL_SSL only, with SCRAM-SHA-512 (credentials added at format time)
and PLAIN; brokers talk to each other there too, as User:broker with SCRAM. The controller ports
take SASL_SSL with PLAIN. KRaft's StandardAuthorizer checks every request: the console's principal
(User:console) and the brokers' are super users, anyone else needs ACLs. A local CA made at setup signs one key pair per node (for
127.0.0.1 and localhost). The passwords are made at setup too, and kept with the CA in the
cluster's directory (readable by its owner only), which the plaintext cluster's never shares.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import secrets as random_secrets
from dataclasses import dataclass
from pathlib import Path

CONSOLE_USER = "console"
BROKER_USER = "broker"
SUPER_USERS = f"User:{CONSOLE_USER};User:{BROKER_USER}"
MECHANISM = "SCRAM-SHA-512"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CERTIFICATE_DAYS = 825  # the longest validity clients accept for a server certificate
SECRETS_FILE = "secrets.json"


@dataclass(frozen=True)
class Secrets:
    console_password: str
    broker_password: str
    keystore_password: str


def _write_private(path: Path, data: bytes) -> bool:
    """Create `path` whole, readable by its owner only; False when it exists already (another
    process made it first): written aside, then linked in, so no reader sees it half written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    try:
        os.link(aside, path)
    except FileExistsError:
        return False
    finally:
        aside.unlink()
    return True


def secrets(root: Path) -> Secrets:
    """The cluster's passwords, made on first use: the console's settings and `devcluster up` may
    both ask first (make run starts them together), so the file is created exclusively."""
    path = root / SECRETS_FILE
    if not path.exists():
        made = {name: random_secrets.token_urlsafe(18) for name in Secrets.__dataclass_fields__}
        _write_private(path, json.dumps(made).encode())
    return Secrets(**json.loads(path.read_text()))


def ca_path(root: Path) -> Path:
    return root / "tls" / "ca.pem"


def keystore_path(root: Path, node: int) -> Path:
    return root / "tls" / f"node{node}.p12"


def make_tls(root: Path, node: int) -> None:
    """The local CA (made once; its key is kept to sign nodes added later) and node's key pair."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if keystore_path(root, node).exists():
        return
    now = datetime.datetime.now(datetime.UTC)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kafka-console local CA")])
    ca_key_path = root / "tls" / "ca.key"
    pem = serialization.Encoding.PEM

    def certificate(name: x509.Name, key: ec.EllipticCurvePrivateKey, signer: ec.EllipticCurvePrivateKey,
                    ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=CERTIFICATE_DAYS))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            builder = builder.add_extension(x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    if not ca_key_path.exists():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(ca_name, key, key, ca=True)
        _write_private(ca_key_path, key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        ca_path(root).write_bytes(cert.public_bytes(pem))
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    node_key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"node{node}")])
    # PKCS#12, not PEM: the JVM reads no key a PEM file holds encrypted.
    password = secrets(root).keystore_password.encode()
    _write_private(keystore_path(root, node), pkcs12.serialize_key_and_certificates(
        f"node{node}".encode(), node_key, certificate(name, node_key, ca_key, ca=False), None,
        serialization.BestAvailableEncryption(password)))


def jaas(module: str, user: str, password: str, **extra: str) -> str:
    options = " ".join(f'{k}="{v}"' for k, v in {"username": user, "password": password, **extra}.items())
    return f"{module} required {options};"


def node_properties(root: Path, node: int, broker_port: int, controller_port: int | None) -> dict[str, str]:
    """What secure mode changes in a node's server.properties."""
    s = secrets(root)
    listeners = f"SASL_SSL://127.0.0.1:{broker_port}"
    if controller_port is not None:
        listeners += f",CONTROLLER://127.0.0.1:{controller_port}"
    scram = jaas(SCRAM_MODULE, BROKER_USER, s.broker_password)
    plain = jaas(PLAIN_MODULE, BROKER_USER, s.broker_password,
                 **{f"user_{BROKER_USER}": s.broker_password, f"user_{CONSOLE_USER}": s.console_password})
    return {
        "listeners": listeners,
        "advertised.listeners": f"SASL_SSL://127.0.0.1:{broker_port}",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.enabled.mechanisms": f"{MECHANISM},PLAIN",
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": scram,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain,
        # The controllers take PLAIN only: SCRAM's credentials live in the metadata log they serve.
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain,
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(keystore_path(root, node)),
        "ssl.keystore.password": s.keystore_password,
        "ssl.key.password": s.keystore_password,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_path(root)),
        "authorizer.class.name": AUTHORIZER,
        "super.users": SUPER_USERS,
    }


def format_arguments(root: Path) -> list[str]:
    """`kafka-storage format` arguments that add the SCRAM credentials of the console and the brokers."""
    s = secrets(root)
    return ["--add-scram", f"{MECHANISM}=[name={CONSOLE_USER},password={s.console_password}]",
            "--add-scram", f"{MECHANISM}=[name={BROKER_USER},password={s.broker_password}]"]


def client_properties(root: Path, user: str = CONSOLE_USER, password: str | None = None) -> str:
    """A client config for Kafka's own tools (--command-config, --producer.config ...), as the console by default."""
    password = secrets(root).console_password if password is None else password
    return (f"security.protocol=SASL_SSL\nsasl.mechanism={MECHANISM}\n"
            f"sasl.jaas.config={jaas(SCRAM_MODULE, user, password)}\n"
            f"ssl.truststore.type=PEM\nssl.truststore.location={ca_path(root)}\n")


def write_client_properties(root: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(client_properties(root))
    path.chmod(0o600)


def console_connection(root: Path) -> dict[str, str]:
    """The console's connection settings for the secure local cluster (ClusterConfig's fields), with
    the super users the brokers are given (Kafka does not disclose them; the permission check needs them)."""
    return {"security_protocol": "SASL_SSL", "sasl_mechanism": MECHANISM, "sasl_username": CONSOLE_USER,
            "sasl_password": secrets(root).console_password, "ssl_ca_location": str(ca_path(root)), "super_users": SUPER_USERS}
