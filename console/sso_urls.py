"""The OpenID Connect login's two routes (console/sso_oidc.py); both need no login."""

from django.urls import path

from console import sso_oidc

urlpatterns = [
    path("authenticate/", sso_oidc.AuthenticateView.as_view(), name="oidc_authentication_init"),
    path("callback/", sso_oidc.CallbackView.as_view(), name="oidc_authentication_callback"),
]
