from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Kafka console"

    def ready(self) -> None:
        from console import audit, sessions, throttle  # noqa: F401 - connect their signal receivers
        from console.private import check_at_start

        check_at_start()
