from django.apps import AppConfig


class ConsumersAppConfig(AppConfig):
    name = "consumers_app"
    verbose_name = "Consumer groups"
