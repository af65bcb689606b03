from django.apps import AppConfig


class TopicsAppConfig(AppConfig):
    name = "topics_app"
    verbose_name = "Topics"

    def ready(self) -> None:
        from console import live
        from console.watcher import registry
        from topics_app import masking_policies, tiered_watch, views

        masking_policies.connect()

        # The topics with remote storage enabled, for the topics list's flag (topics_app/tiered_watch.py).
        registry.register_side_watch("tiered", tiered_watch.watch)
        live.register_fragment("layout", views.layout_fragment, shared=True)
        live.register_fragment("at_risk", views.at_risk_fragment, shared=True)
        live.register_fragment("topics", views.topics_fragment, shared=True, action="topic.view")
        live.register_fragment("topic", views.detail_fragment, shared=True, action="topic.view")
