from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Kafka console"

    def ready(self) -> None:
        from console import audit  # noqa: F401 - connects the audit signal receivers
