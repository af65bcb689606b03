from django.apps import AppConfig


class BrokersAppConfig(AppConfig):
    name = "brokers_app"
    verbose_name = "Brokers and events"

    def ready(self) -> None:
        from brokers_app.watching import EventTable
        from console.watcher import registry

        registry.register_events(EventTable())
