"""Routes of alerting: a cluster's alert pages and API, and the global channels and silences."""

from django.urls import URLPattern, path

from alerts_app import api, views, views_config

page = "clusters/<str:cluster>/alerts/"
cluster_api = "api/v1/clusters/<str:cluster>/"

urlpatterns: list[URLPattern] = [
    # Pages of a cluster (channels are global, shown under each cluster's pages)
    path(page, views.active_page, name="alerts"),
    path(page + "history/", views.history_page, name="alerts_history"),
    path(page + "rules/", views.rules_page, name="alert_rules"),
    path(page + "rules/<int:rule_id>/", views.rule_page, name="alert_rule"),
    path(page + "silences/", views_config.silences_page, name="alert_silences"),
    path(page + "channels/", views_config.channels_page, name="alert_channels"),
    path(page + "channels/<name:channel>/", views_config.channel_page, name="alert_channel"),
    # API
    path("api/v1/alert-channels/", api.Channels.as_view()),
    path("api/v1/alert-channels/<name:channel>/", api.ChannelDetail.as_view()),
    path("api/v1/alert-channels/<name:channel>/test/", api.ChannelTest.as_view()),
    path("api/v1/alert-channels/<name:channel>/deliveries/<int:delivery_id>/retry/", api.DeliveryRetry.as_view()),
    path(cluster_api + "alert-rules/", api.Rules.as_view()),
    path(cluster_api + "alert-rules/preview/", api.RulePreview.as_view()),
    path(cluster_api + "alert-rules/<int:rule_id>/", api.RuleDetail.as_view()),
    path(cluster_api + "alerts/", api.Alerts.as_view()),
    path(cluster_api + "alerts/<int:alert_id>/acknowledge/", api.Acknowledge.as_view()),
    path("api/v1/silences/", api.Silences.as_view()),
    path("api/v1/silences/<int:silence_id>/", api.SilenceDetail.as_view()),
]
