from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Kafka console"

    def ready(self) -> None:
        from console import audit, sessions, throttle  # noqa: F401 - connect their signal receivers
        from console.private import check_at_start

        check_at_start()
        from django.db.models.signals import post_delete, post_save

        from console.auth import bump_generation
        from console.models import RoleBinding

        post_save.connect(bump_generation, sender=RoleBinding, dispatch_uid="access-generation-save")
        post_delete.connect(bump_generation, sender=RoleBinding, dispatch_uid="access-generation-delete")
