from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView

from analytics import api as analytics_api
from analytics import views as analytics_views
from brokers_app import api as brokers_api
from brokers_app import views as brokers_views
from console import api_audit, bindings_views, views
from console.auth import ActionPermission
from console.converters import FreeNameConverter
from consumers_app import api as consumers_api
from consumers_app import views as consumers_views
from topics_app import api as topics_api
from topics_app import masking_api, schema_api, schema_views
from topics_app import views as topics_views


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema: no cluster data, but, like every route, behind the one check."""

    permission_classes = [ActionPermission]
    actions = {"GET": "console.view"}


register_converter(FreeNameConverter, "name")  # group ids: any character Kafka allows

api = "api/v1/clusters/"
urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("oidc/", include("console.sso_urls")),  # single sign-on (OpenID Connect)
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", consumers_api.Metrics.as_view(), name="metrics"),
    path("audit/", views.audit, name="audit"),
    path("access/", bindings_views.access_page, name="access"),
    path("api/v1/role-bindings/", bindings_views.Bindings.as_view()),
    path("api/v1/role-bindings/<int:binding_id>/", bindings_views.BindingDetail.as_view()),
    path("admin/", admin.site.urls),
    path("clusters/<str:cluster>/", brokers_views.overview, name="overview"),
    path("clusters/<str:cluster>/layout/", topics_views.layout, name="layout"),
    path("clusters/<str:cluster>/at-risk/", topics_views.at_risk, name="at_risk"),
    path("clusters/<str:cluster>/brokers/<int:broker>/", brokers_views.broker, name="broker"),
    path("clusters/<str:cluster>/events/", brokers_views.events, name="events"),
    path("clusters/<str:cluster>/reassignments/", brokers_views.reassignments, name="reassignments"),
    path("clusters/<str:cluster>/analytics/", analytics_views.analytics_page, name="analytics"),
    path("clusters/<str:cluster>/reports/", analytics_views.reports_page, name="reports"),
    path("clusters/<str:cluster>/reports/<int:report_id>/", analytics_views.report_page, name="report"),
    path("clusters/<str:cluster>/reports/<int:report_id>/report.html", analytics_views.report_download, {"fmt": "html"}, name="report_html"),
    path("clusters/<str:cluster>/reports/<int:report_id>/report.csv", analytics_views.report_download, {"fmt": "csv"}, name="report_csv"),
    path("clusters/<str:cluster>/reassignments/<int:job_id>/", brokers_views.reassignment, name="reassignment"),
    path("clusters/<str:cluster>/reassignments/<int:job_id>/plan.json", brokers_views.reassignment_json, name="reassignment_json"),
    path("clusters/<str:cluster>/groups/", consumers_views.groups, name="groups"),
    path("clusters/<str:cluster>/groups/<name:group>/", consumers_views.group_detail, name="group"),
    path("clusters/<str:cluster>/groups/<name:group>/reset/", consumers_views.group_reset, name="group_reset"),
    path("clusters/<str:cluster>/groups/<name:group>/delete/", consumers_views.group_delete, name="group_delete"),
    path("clusters/<str:cluster>/topics/", topics_views.topics, name="topics"),
    path("clusters/<str:cluster>/topics/new/", topics_views.topic_create, name="topic_create"),
    path("clusters/<str:cluster>/topics/<str:topic>/", topics_views.topic_detail, name="topic"),
    path("clusters/<str:cluster>/topics/<str:topic>/configs/", topics_views.topic_configs_edit, name="topic_configs"),
    path("clusters/<str:cluster>/topics/<str:topic>/partitions/", topics_views.topic_partitions_add, name="topic_partitions_add"),
    path("clusters/<str:cluster>/topics/<str:topic>/purge/", topics_views.topic_purge, name="topic_purge"),
    path("clusters/<str:cluster>/topics/<str:topic>/delete/", topics_views.topic_delete, name="topic_delete"),
    path("clusters/<str:cluster>/topics/<str:topic>/messages/", topics_views.messages_page, name="topic_messages"),
    path("clusters/<str:cluster>/topics/<str:topic>/messages/produce/", topics_views.message_produce, name="message_produce"),
    path("clusters/<str:cluster>/topics/<str:topic>/messages/republish/", topics_views.message_republish,
         name="message_republish"),
    path("clusters/<str:cluster>/topics/<str:topic>/schemas/", schema_views.schema_upload, name="topic_schema_upload"),
    path("clusters/<str:cluster>/topics/<str:topic>/schemas/<int:schema_id>/delete/", schema_views.schema_delete,
         name="topic_schema_delete"),
    path("", include("security_app.urls")),
    path("", include("alerts_app.urls")),
    path("", include("connect_app.urls")),
    path("", include("transactions_app.urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/v1/audit/", api_audit.AuditList.as_view()),
    path("api/v1/masking-policies/", masking_api.MaskingPolicies.as_view()),
    path("api/v1/masking-policies/<int:pk>/", masking_api.MaskingPolicyDetail.as_view()),
    path(api, brokers_api.ClusterList.as_view()),
    path(api + "<str:cluster>/", brokers_api.ClusterDetail.as_view()),
    path(api + "<str:cluster>/brokers/", brokers_api.BrokerList.as_view()),
    path(api + "<str:cluster>/brokers/<int:broker>/replica-lag/", brokers_api.BrokerReplicaLag.as_view()),
    path(api + "<str:cluster>/events/", brokers_api.EventList.as_view()),
    path(api + "<str:cluster>/leader-elections/", brokers_api.LeaderElections.as_view()),
    path(api + "<str:cluster>/reassignments/", brokers_api.Reassignments.as_view()),
    path(api + "<str:cluster>/reassignments/<int:job_id>/", brokers_api.ReassignmentDetail.as_view()),
    path(api + "<str:cluster>/analytics/runs/", analytics_api.Runs.as_view()),
    path(api + "<str:cluster>/analytics/runs/<int:run_id>/", analytics_api.RunDetail.as_view()),
    path(api + "<str:cluster>/analytics/topics/<str:topic>/", analytics_api.TopicHistory.as_view()),
    path(api + "<str:cluster>/analytics/consumer-groups/<name:group>/", analytics_api.GroupHistory.as_view()),
    path(api + "<str:cluster>/report-schedules/", analytics_api.Schedules.as_view()),
    path("api/v1/reports/", analytics_api.Reports.as_view()),
    path("api/v1/reports/<int:report_id>/", analytics_api.ReportDetail.as_view()),
    path("api/v1/reports/<int:report_id>/report.csv", analytics_api.ReportFile.as_view(), {"fmt": "csv"}),
    path("api/v1/reports/<int:report_id>/report.html", analytics_api.ReportFile.as_view(), {"fmt": "html"}),
    path(api + "<str:cluster>/consumer-groups/", consumers_api.GroupList.as_view()),
    path(api + "<str:cluster>/rebalances/most-frequent/", consumers_api.MostRebalancing.as_view()),
    path(api + "<str:cluster>/consumer-groups/<name:group>/", consumers_api.GroupDetail.as_view()),
    path(api + "<str:cluster>/consumer-groups/<name:group>/streams/", consumers_api.GroupStreams.as_view()),
    path(api + "<str:cluster>/consumer-groups/<name:group>/offsets", consumers_api.GroupOffsets.as_view()),
    path(api + "<str:cluster>/consumer-groups/<name:group>/offsets/", consumers_api.GroupOffsets.as_view()),
    path(api + "<str:cluster>/consumer-groups/<name:group>/rebalances/", consumers_api.GroupRebalances.as_view()),
    path(api + "<str:cluster>/topics/", topics_api.TopicList.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/", topics_api.TopicDetail.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/configs/", topics_api.TopicConfigs.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/records/", topics_api.TopicRecords.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/partitions/", topics_api.PartitionList.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/messages/", topics_api.TopicMessages.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/messages/republish/", topics_api.RepublishMessage.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/schemas/", schema_api.TopicSchemas.as_view()),
    path(api + "<str:cluster>/topics/<str:topic>/schemas/<int:schema_id>/", schema_api.TopicSchemaDetail.as_view()),
]

handler404 = "console.error_responses.not_found"
handler500 = "console.error_responses.server_error"
