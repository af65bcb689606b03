from django.apps import AppConfig


class AlertsAppConfig(AppConfig):
    name = "alerts_app"
    verbose_name = "Alerts: rules, channels, silences and their history"
