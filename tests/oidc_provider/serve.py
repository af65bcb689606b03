"""Start the test OpenID provider: `python -m tests.oidc_provider.serve DIR PORT REDIRECT_URI`.

Makes an RS256 signing key (once per DIR), its database, a user `olga` in group `kafka-ops`, a user
`nina` in no group, and a confidential client `kafka-console` (PKCE required, consent asked) that
may send users back only to REDIRECT_URI; then serves on 127.0.0.1:PORT until stopped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CLIENT_ID = "kafka-console"
CLIENT_SECRET = "kafka-console-test-secret"
PASSWORD = "provider-password-1"
USERS = {"olga": ["kafka-ops"], "nina": [], "ada": ["kafka-admins", "kafka-ops"]}


def _signing_key(path: Path) -> None:
    if path.exists():
        return
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def main(directory: str, port: int, redirect_uri: str) -> None:
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    _signing_key(root / "signing-key.pem")
    os.environ.update(DJANGO_SETTINGS_MODULE="tests.oidc_provider.settings", OIDC_PROVIDER_DIR=str(root),
                      OIDC_PROVIDER_URL=f"http://127.0.0.1:{port}")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.core.servers.basehttp import WSGIServer, run
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for name, groups in USERS.items():
        user = User.objects.filter(username=name).first() or User.objects.create_user(name, f"{name}@example.org")
        user.set_password(PASSWORD)
        user.save()
        user.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])
    Application.objects.filter(client_id=CLIENT_ID).delete()
    Application.objects.create(
        name="Kafka console", client_id=CLIENT_ID, client_secret=CLIENT_SECRET, redirect_uris=redirect_uri,
        client_type=Application.CLIENT_CONFIDENTIAL, authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        algorithm=Application.RS256_ALGORITHM, skip_authorization=False,
    )
    print(f"serving the test OpenID provider on 127.0.0.1:{port}", flush=True)
    run("127.0.0.1", port, get_wsgi_application(), threading=True, server_cls=WSGIServer)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
