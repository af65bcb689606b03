from django.apps import AppConfig


class BrokersAppConfig(AppConfig):
    name = "brokers_app"
    verbose_name = "Brokers and events"
