from django.apps import AppConfig


class TopicsAppConfig(AppConfig):
    name = "topics_app"
    verbose_name = "Topics"
