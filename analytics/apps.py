from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    verbose_name = "Analytics"

    def ready(self) -> None:
        from analytics.sampling import SampleWriter
        from console.watcher import registry

        registry.register_samples(SampleWriter)
