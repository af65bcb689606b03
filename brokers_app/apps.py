from django.apps import AppConfig


class BrokersAppConfig(AppConfig):
    name = "brokers_app"
    verbose_name = "Brokers and events"

    def ready(self) -> None:
        from brokers_app import services, views
        from brokers_app.watching import EventTable
        from console import live
        from console.watcher import registry

        registry.register_events(EventTable())
        live.register_fragment("overview", views.overview_fragment, shared=True)
        live.register_fragment("broker", views.broker_fragment, shared=True)
        live.register_events(live.EventsView(filters=services.event_filters, matches=services.event_matches, rows=views.event_rows))
        live.register_view("reassignments", action="reassignments.view")
        live.register_on_message("reassignment.progress", live.OnMessage(
            "reassignment", views.job_fragment, wants=lambda params, message: params.get("job") == str(message["job"])),
            action="reassignments.view")
