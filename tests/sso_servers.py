"""Real identity providers for the single sign-on tests, each the test's own process on loopback.

- `running_slapd`: Debian's slapd with its own slapd.conf and database under the test var dir,
  loaded (slapadd) with users and groups: otto in cn=kafka-operators, alma in cn=kafka-admins,
  vera in no group.
- `running_oidc_provider`: django-oauth-toolkit's OpenID provider (tests/oidc_provider/), with users
  olga (group kafka-ops), ada (kafka-admins and kafka-ops) and nina (no group).

Ports: TEST_LDAP_PORT and TEST_OIDC_PORT, by default the test Redis port + 32500 and + 32600, so
suites run side by side with their own (as TEST_REDIS_PORT moves the rest).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.oidc_provider.serve import CLIENT_ID, CLIENT_SECRET
from tests.oidc_provider.serve import PASSWORD as OIDC_PASSWORD
from tests.support import REDIS_PORT, ROOT, TEST_VAR, free_port, wait_for

LDAP_PORT = int(os.environ.get("TEST_LDAP_PORT") or REDIS_PORT + 32500)
OIDC_PORT = int(os.environ.get("TEST_OIDC_PORT") or REDIS_PORT + 32600)
LDAP_BASE = "dc=example,dc=org"
LDAP_ADMIN = f"cn=admin,{LDAP_BASE}"
LDAP_ADMIN_PASSWORD = "directory-admin-secret"
LDAP_PASSWORD = "directory-password-1"
LDAP_USERS = {"otto": "kafka-operators", "alma": "kafka-admins", "vera": None}

__all__ = ["CLIENT_ID", "CLIENT_SECRET", "OIDC_PASSWORD", "Directory", "Provider", "running_oidc_provider",
           "running_slapd"]

_SLAPD_CONF = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {dir}/slapd.pid
argsfile {dir}/slapd.args
database mdb
maxsize 16777216
suffix "{base}"
rootdn "{admin}"
rootpw {admin_password}
directory {dir}/data
"""


def _ldif() -> str:
    entries = [
        f"dn: {LDAP_BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example",
        f"dn: ou=people,{LDAP_BASE}\nobjectClass: organizationalUnit\nou: people",
        f"dn: ou=groups,{LDAP_BASE}\nobjectClass: organizationalUnit\nou: groups",
    ]
    for uid in LDAP_USERS:
        entries.append(f"dn: uid={uid},ou=people,{LDAP_BASE}\nobjectClass: inetOrgPerson\nuid: {uid}\n"
                       f"cn: {uid.title()} Example\nsn: Example\ngivenName: {uid.title()}\nmail: {uid}@example.org\n"
                       f"userPassword: {LDAP_PASSWORD}")
    for group in sorted({g for g in LDAP_USERS.values() if g}):
        members = "\n".join(f"member: uid={uid},ou=people,{LDAP_BASE}" for uid, g in LDAP_USERS.items() if g == group)
        entries.append(f"dn: cn={group},ou=groups,{LDAP_BASE}\nobjectClass: groupOfNames\ncn: {group}\n{members}")
    return "\n\n".join(entries) + "\n"


@dataclass(frozen=True)
class Directory:
    uri: str

    def env(self, role_map: str = '{"kafka-operators": "operator", "kafka-admins": "admin"}') -> dict[str, str]:
        """The console's CONSOLE_LDAP_* settings for this directory."""
        return {
            "CONSOLE_LDAP_SERVER_URI": self.uri,
            "CONSOLE_LDAP_BIND_DN": LDAP_ADMIN,
            "CONSOLE_LDAP_BIND_PASSWORD": LDAP_ADMIN_PASSWORD,
            "CONSOLE_LDAP_USER_SEARCH_BASE": f"ou=people,{LDAP_BASE}",
            "CONSOLE_LDAP_USER_SEARCH_FILTER": "(uid=%(user)s)",
            "CONSOLE_LDAP_GROUP_SEARCH_BASE": f"ou=groups,{LDAP_BASE}",
            "CONSOLE_LDAP_GROUP_SEARCH_FILTER": "(objectClass=groupOfNames)",
            "CONSOLE_LDAP_GROUP_TYPE": "groupOfNames",
            "CONSOLE_LDAP_ROLE_MAP": role_map,
        }


@contextmanager
def running_slapd() -> Iterator[Directory]:
    slapd = shutil.which("slapd") or "/usr/sbin/slapd"
    if not Path(slapd).exists():
        raise AssertionError("slapd is not installed: `make test-deps` installs Debian's slapd")
    root = TEST_VAR / "ldap"
    shutil.rmtree(root, ignore_errors=True)
    (root / "data").mkdir(parents=True)
    conf = root / "slapd.conf"
    conf.write_text(_SLAPD_CONF.format(dir=root, base=LDAP_BASE, admin=LDAP_ADMIN, admin_password=LDAP_ADMIN_PASSWORD))
    (root / "directory.ldif").write_text(_ldif())
    loaded = subprocess.run([shutil.which("slapadd") or "/usr/sbin/slapadd", "-f", str(conf), "-l", str(root / "directory.ldif")],
                            capture_output=True, text=True, timeout=60)
    if loaded.returncode != 0:
        raise AssertionError(f"slapadd failed:\n{loaded.stdout}\n{loaded.stderr}")
    uri = f"ldap://127.0.0.1:{_port('TEST_LDAP_PORT', LDAP_PORT)}/"
    with open(root / "slapd.log", "wb") as log:
        # -d keeps slapd in the foreground (the test owns the process); "none" logs nothing but errors.
        proc = subprocess.Popen([slapd, "-h", uri, "-f", str(conf), "-d", "none"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: proc.poll() is None and _answers(uri), 15, what=f"slapd on {uri} (log: {root / 'slapd.log'})")
        yield Directory(uri)
    finally:
        proc.terminate()
        proc.wait(10)


def _port(name: str, default: int) -> int:
    """The port a server is told to listen on: the one set in the environment, else the default when
    it is free, else one the system picks, as the default lies in the range the system also hands
    out to outgoing connections (other layers' clients may hold it for a while)."""
    if os.environ.get(name):
        return default
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", default))
            return default
        except OSError:
            return free_port()


def _answers(uri: str) -> bool:
    import ldap

    conn = ldap.initialize(uri)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 2)
    conn.simple_bind_s(LDAP_ADMIN, LDAP_ADMIN_PASSWORD)
    conn.unbind_s()
    return True


@dataclass(frozen=True)
class Provider:
    url: str

    @property
    def issuer(self) -> str:
        return self.url + "/o"

    def settings(self, role_map: dict[str, str] | None = None) -> dict[str, object]:
        """The console's settings (as console/sso_settings.py makes them) to sign in through this provider."""
        return {
            "CONSOLE_OIDC_ENABLED": True,
            "CONSOLE_OIDC_PROVIDER_NAME": "Test IdP",
            "CONSOLE_OIDC_ISSUER": self.issuer,
            "CONSOLE_OIDC_ENDPOINTS": {"AUTHORIZATION": "", "TOKEN": "", "USERINFO": "", "JWKS": ""},
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_RP_SCOPES": "openid profile email groups",
        }


@contextmanager
def running_oidc_provider(redirect_uri: str) -> Iterator[Provider]:
    """The provider, with the console's callback (`redirect_uri`) as its client's only redirect URI."""
    root = TEST_VAR / "oidc-provider"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    port = _port("TEST_OIDC_PORT", OIDC_PORT)
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    with open(root / "provider.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "tests.oidc_provider.serve", str(root), str(port), redirect_uri],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: proc.poll() is None and requests.get(url + "/o/.well-known/openid-configuration", timeout=2).ok,
                 60, what=f"the test OpenID provider on {url} (log: {root / 'provider.log'})")
        yield Provider(url)
    finally:
        proc.terminate()
        proc.wait(10)
