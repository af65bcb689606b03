from typing import Any

from django.apps import AppConfig


class AlertsAppConfig(AppConfig):
    name = "alerts_app"
    verbose_name = "Alerts: rules, channels, silences and their history"

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from alerts_app import evaluator, generation
        from alerts_app.models import AlertChannel, AlertRule, Silence
        from console.watcher import registry

        registry.register_alert_evaluation(evaluator.factory)

        # Every change of a rule, a channel or a silence makes the evaluators read them again at
        # their next cycle, whichever process made it.
        def changed(sender: Any, **kwargs: Any) -> None:
            generation.bump_generation()

        for model in (AlertRule, AlertChannel, Silence):
            post_save.connect(changed, sender=model, weak=False, dispatch_uid=f"alerts-generation-save-{model.__name__}")
            post_delete.connect(changed, sender=model, weak=False, dispatch_uid=f"alerts-generation-delete-{model.__name__}")
        m2m_changed.connect(changed, sender=AlertRule.channels.through, weak=False, dispatch_uid="alerts-generation-channels")

        # The pages (alerts_app/views.py): the active alerts are redrawn with each snapshot of their
        # cluster; they read the database, so they are drawn per page, not shared.
        from alerts_app import views
        from console import live

        live.register_fragment("alerts", views.alerts_fragment, action="alerts.view")
        for view in ("alerts_history", "alert_rules", "alert_silences", "alert_channels"):
            live.register_view(view, action="alerts.view")  # (the status bar's cluster state, live)
