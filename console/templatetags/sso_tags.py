"""The login page's single sign-on button, shown when OpenID Connect is configured."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template
from django.conf import settings
from django.urls import reverse

register = template.Library()


@register.inclusion_tag("registration/_sso.html")
def sso_buttons(next_url: str = "") -> dict[str, Any]:
    if not getattr(settings, "CONSOLE_OIDC_ENABLED", False):
        return {"oidc": None}
    query = "?" + urlencode({"next": next_url}) if next_url else ""
    return {"oidc": {"name": getattr(settings, "CONSOLE_OIDC_PROVIDER_NAME", "single sign-on"),
                     "url": reverse("oidc_authentication_init") + query}}
