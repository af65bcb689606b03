from django.apps import AppConfig


class TopicsAppConfig(AppConfig):
    name = "topics_app"
    verbose_name = "Topics"

    def ready(self) -> None:
        from console import live
        from topics_app import masking_policies, views

        masking_policies.connect()

        live.register_fragment("layout", views.layout_fragment, shared=True)
        live.register_fragment("at_risk", views.at_risk_fragment, shared=True)
        live.register_fragment("topics", views.topics_fragment, shared=True, action="topic.view")
        live.register_fragment("topic", views.detail_fragment, shared=True, action="topic.view")
