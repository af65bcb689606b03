"""ASGI entry point: HTTP through Django, websockets through Channels with session auth."""

import os

from django.core.asgi import get_asgi_application

from console.private import restrict_umask

restrict_umask()  # before anything is written: the console's files are its user's only
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from console.rawpath import EncodedSlashes  # noqa: E402
from console.routing import websocket_urlpatterns  # noqa: E402
from console.socket_auth import socket_auth_stack  # noqa: E402

# Outermost, so every route sees a name sent as `team%2Fservice` as one segment (console/rawpath.py).
application = EncodedSlashes(ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(socket_auth_stack(URLRouter(websocket_urlpatterns))),
    }
))
