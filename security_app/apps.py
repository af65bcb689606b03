from django.apps import AppConfig


class SecurityAppConfig(AppConfig):
    name = "security_app"
    verbose_name = "Kafka security: ACLs, SCRAM users and quotas"
