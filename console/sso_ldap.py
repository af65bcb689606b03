"""LDAP login through django-auth-ldap: the console's login form checks the password against the
directory when no local account has it, and sets the role the user's directory groups map to.

Group names given to the role map (CONSOLE_LDAP_ROLE_MAP) are each group's cn and its full DN, so
either may be a key. Failures the user can act on are shown on the login page as a sentence.
"""

from __future__ import annotations

import logging
from typing import Any

import ldap
from django.contrib import messages
from django.dispatch import receiver
from django.http import HttpRequest
from django_auth_ldap.backend import LDAPBackend as _LDAPBackend
from django_auth_ldap.backend import ldap_error

from console.sso import SignOnRefused, assign_role, audit_refusal, check_not_local, groups_to_role

log = logging.getLogger(__name__)


def _tell(request: HttpRequest | None, message: str) -> None:
    if request is not None and hasattr(request, "_messages"):
        messages.error(request, message)


class LDAPBackend(_LDAPBackend):
    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[Any, bool]:
        """Called once the directory took the password: refuses before any account is made or changed."""
        user, built = super().get_or_build_user(username, ldap_user)
        groups = self.groups(ldap_user)  # an LDAPError here is reported by django-auth-ldap (ldap_error)
        self._refuse_if(ldap_user, lambda: None if built else check_not_local(user))
        self._refuse_if(ldap_user, lambda: groups_to_role(groups, "ldap"))
        ldap_user.console_groups = groups
        return user, built

    def authenticate_ldap_user(self, ldap_user: Any, password: str) -> Any:
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is not None:
            assign_role(user, ldap_user.console_groups, "ldap")
        return user

    def groups(self, ldap_user: Any) -> list[str]:
        """The user's groups, by cn and by DN; none when no group search is configured."""
        if self.settings.GROUP_SEARCH is None:
            return []
        return sorted(set(ldap_user.group_names) | set(ldap_user.group_dns))

    def _refuse_if(self, ldap_user: Any, check: Any) -> None:
        try:
            check()
        except SignOnRefused as exc:
            request = getattr(ldap_user, "_request", None)
            _tell(request, str(exc))
            audit_refusal(request, getattr(ldap_user, "_username", ""), "ldap", str(exc))
            raise


@receiver(ldap_error)
def _directory_failed(sender: Any, context: str, user: Any, request: HttpRequest | None = None,
                      exception: Exception | None = None, **kwargs: Any) -> None:
    """A directory that cannot be reached is said so on the login page (not "wrong password")."""
    if isinstance(exception, ldap.SERVER_DOWN | ldap.TIMEOUT):
        _tell(request, "The LDAP directory could not be reached; try again later, or log in with a local account.")
    elif exception is not None:
        _tell(request, "The LDAP directory refused the console's look-up (see the console's log); ask an admin to "
                       "check the CONSOLE_LDAP_* settings.")
