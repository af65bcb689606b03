from django.apps import AppConfig


class ConsumersAppConfig(AppConfig):
    name = "consumers_app"
    verbose_name = "Consumer groups"

    def ready(self) -> None:
        from console import live
        from console.watcher import registry
        from consumers_app import views
        from consumers_app.group_evaluation import GroupEvaluation

        registry.register_group_evaluation(GroupEvaluation)
        live.register_fragment("groups", views.groups_fragment, shared=True, action="group.view")
        live.register_fragment("group", views.detail_fragment, action="group.view")
