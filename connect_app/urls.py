"""Routes of Kafka Connect: pages under clusters/<cluster>/connect/, the API under api/v1/clusters/<cluster>/."""

from django.urls import URLPattern, path

from connect_app import api, api_offsets, mirror_views, views, views_forms, views_offsets

page = "clusters/<str:cluster>/connect/"
one = page + "<str:connect>/<name:connector>/"
api_root = "api/v1/clusters/<str:cluster>/"

urlpatterns: list[URLPattern] = [
    path(page, views.connectors_page, name="connectors"),
    path(page + "plugins/", views.plugins_page, name="connect_plugins"),
    path(page + "new/", views_forms.connector_new, name="connector_new"),
    path(one, views.connector_page, name="connector"),
    path(one + "edit/", views_forms.connector_edit, name="connector_edit"),
    path(one + "delete/", views_forms.connector_delete, name="connector_delete"),
    path(one + "offsets/", views_offsets.connector_offsets, name="connector_offsets"),
    path(one + "restart-policy/", views_offsets.connector_restart_policy, name="connector_restart_policy"),
    path(api_root + "connectors/", api.ConnectorList.as_view()),
    path(api_root + "connectors/<name:connector>/", api.ConnectorDetail.as_view()),
    path(api_root + "connect-plugins/", api.PluginList.as_view()),
    path("clusters/<str:cluster>/replication/", mirror_views.replication_page, name="replication"),
    path(api_root + "replication/", mirror_views.Replication.as_view()),
    path(api_root + "connectors/<name:connector>/offsets/", api_offsets.ConnectorOffsets.as_view()),
    path(api_root + "connectors/<name:connector>/restart-policy/", api_offsets.ConnectorRestartPolicy.as_view()),
]
