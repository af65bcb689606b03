"""Routes of Kafka's own security: ACLs and the effective-permission check, SCRAM users, quotas."""

from django.urls import URLPattern, path  # noqa: F401 - the sections below add their routes

from security_app import quotas_api, quotas_views, users_api, users_views

page = "clusters/<str:cluster>/security/"
api = "api/v1/clusters/<str:cluster>/"

urlpatterns: list[URLPattern] = [
    # ACLs and the effective-permission check
    # SCRAM users
    path(page + "users/", users_views.users_page, name="security_users"),
    path(api + "users/", users_api.ScramUserList.as_view()),
    path(api + "users/<name:user>/", users_api.ScramUserDetail.as_view()),
    # Quotas
    path(page + "quotas/", quotas_views.quotas_page, name="security_quotas"),
    path(api + "quotas/", quotas_api.QuotaList.as_view()),
    path(api + "quotas/effective/", quotas_api.EffectiveQuota.as_view()),
]
