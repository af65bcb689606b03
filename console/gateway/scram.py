"""SCRAM users: Kafka's DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554).

Kafka keeps only a salted hash of each password, per mechanism, with its iteration count: that is
all a description holds, and all the console can show. A password travels only inside the
AlterUserScramCredentials request librdkafka builds (it salts and hashes it on the client side).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from console.gateway.connections import Connections

MECHANISMS = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}
_NAMES = {v: k for k, v in MECHANISMS.items()}


@dataclass(frozen=True)
class ScramCredential:
    mechanism: str  # "SCRAM-SHA-256" or "SCRAM-SHA-512"
    iterations: int


@dataclass(frozen=True)
class ScramUser:
    name: str
    credentials: tuple[ScramCredential, ...]


class ScramUsers(Connections):
    """List, upsert and delete SCRAM credentials."""

    def scram_users(self) -> list[ScramUser]:
        """Every user with at least one SCRAM credential, by name."""

        def run() -> list[ScramUser]:
            future = self._admin_client().describe_user_scram_credentials(request_timeout=self.timeout)
            assert isinstance(future, Future)  # (one future when no user is named)
            described = self._result(future)
            return sorted(
                (
                    ScramUser(
                        name=name,
                        credentials=tuple(sorted(
                            (ScramCredential(_NAMES.get(i.mechanism, str(i.mechanism)), int(i.iterations))
                             for i in d.scram_credential_infos),
                            key=lambda c: c.mechanism,
                        )),
                    )
                    for name, d in described.items()
                ),
                key=lambda u: u.name,
            )

        return self._call("describe the SCRAM users", run)

    def upsert_scram_credential(self, user: str, mechanism: str, password: str, iterations: int) -> None:
        """Create the user's credential for this mechanism, or replace its password."""
        info = ScramCredentialInfo(MECHANISMS[mechanism], iterations)
        upsertion = UserScramCredentialUpsertion(user, info, password.encode())

        def run() -> None:
            futures = self._admin_client().alter_user_scram_credentials([upsertion], request_timeout=self.timeout)
            self._result(futures[user])

        self._call(f"set the {mechanism} credential of user '{user}'", run)

    def delete_scram_credentials(self, user: str, mechanisms: list[str]) -> None:
        """Remove the user's credentials for these mechanisms (in one request)."""
        deletions: list[UserScramCredentialAlteration] = [UserScramCredentialDeletion(user, MECHANISMS[m]) for m in mechanisms]

        def run() -> None:
            futures = self._admin_client().alter_user_scram_credentials(deletions, request_timeout=self.timeout)
            self._result(futures[user])

        self._call(f"delete the SCRAM credentials of user '{user}'", run)
