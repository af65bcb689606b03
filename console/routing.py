from django.urls import path

from console.sockets import LiveConsumer
from topics_app.sockets import MessagesConsumer

websocket_urlpatterns = [
    path("ws/clusters/<str:cluster>/live/", LiveConsumer.as_asgi()),
    path("ws/clusters/<str:cluster>/topics/<str:topic>/messages/", MessagesConsumer.as_asgi()),
]
