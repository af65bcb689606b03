from django.apps import AppConfig


class ConnectAppConfig(AppConfig):
    name = "connect_app"
    verbose_name = "Kafka Connect: connectors, their tasks and plugins"
