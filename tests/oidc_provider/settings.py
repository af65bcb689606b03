"""The test OpenID provider's settings: django-oauth-toolkit with OpenID Connect, RS256 and PKCE required.

serve.py sets OIDC_PROVIDER_DIR (its database and signing key) and OIDC_PROVIDER_URL before Django loads this.
"""

import os
from pathlib import Path

DIR = Path(os.environ["OIDC_PROVIDER_DIR"])
URL = os.environ["OIDC_PROVIDER_URL"]

SECRET_KEY = "test-oidc-provider-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [Path(__file__).resolve().parent / "templates"],
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": ["django.template.context_processors.request",
                                       "django.contrib.auth.context_processors.auth"]},
}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DIR / "provider.sqlite3"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/accounts/login/"
USE_TZ = True
# The console's session cookie and the provider's share the host 127.0.0.1 (cookies ignore ports).
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": URL + "/o",
    "OIDC_RSA_PRIVATE_KEY": (DIR / "signing-key.pem").read_text(),
    "PKCE_REQUIRED": True,
    "SCOPES": {"openid": "OpenID Connect", "profile": "Your name", "email": "Your e-mail address",
               "groups": "Your groups"},
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.validator.GroupsValidator",
}
