from django.apps import AppConfig


class AnalyticsConfig(AppConfig):
    name = "analytics"
    verbose_name = "Analytics"

    def ready(self) -> None:
        from analytics import views
        from analytics.sampling import SampleWriter
        from console import live
        from console.watcher import registry

        registry.register_samples(SampleWriter)
        live.register_on_message("analytics.progress", live.OnMessage("analytics", views.runs_fragment),
                                   action="analytics.view")
        live.register_view("reports", action="analytics.view")
