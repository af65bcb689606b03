from django.urls import path

from console.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/clusters/<str:cluster>/live/", LiveConsumer.as_asgi()),
]
