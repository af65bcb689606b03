from django.apps import AppConfig


class ConsumersAppConfig(AppConfig):
    name = "consumers_app"
    verbose_name = "Consumer groups"

    def ready(self) -> None:
        from console.watcher import registry
        from consumers_app.watching import GroupEvaluation

        registry.register_group_evaluation(GroupEvaluation)
