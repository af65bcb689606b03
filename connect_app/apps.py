from django.apps import AppConfig


class ConnectAppConfig(AppConfig):
    name = "connect_app"
    verbose_name = "Kafka Connect: connectors, their tasks and plugins"

    def ready(self) -> None:
        from connect_app import restarts, state, views
        from console import live
        from console.watcher import registry

        # The watcher reads each Connect cluster while it holds its Kafka cluster's lease; pages are
        # redrawn when a read changed something (connect_app/state.py).
        registry.register_side_watch("connect", state.watch)
        # ... and restarts failed tasks under their connectors' policies, from those reads (connect_app/restarts.py).
        registry.register_side_watch("connect_restarts", restarts.watch)
        live.register_on_message(state.MESSAGE, live.OnMessage(views.VIEW, views.live_fragment, views.wants),
                                 action="connect.view")
        for view in ("connect_plugins", "connector_form", "connector_delete"):
            live.register_view(view, action="connect.view")  # (the status bar's cluster state, live)
        live.register_view("replication", action="replication.view")
