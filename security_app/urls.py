"""Routes of Kafka's own security: ACLs and the effective-permission check, SCRAM users, quotas."""

from django.urls import URLPattern, path  # noqa: F401 - the sections below add their routes

from security_app import acl_api, acl_views, quotas_api, quotas_views, users_api, users_views

page = "clusters/<str:cluster>/security/"
api = "api/v1/clusters/<str:cluster>/"

urlpatterns: list[URLPattern] = [
    # ACLs and the effective-permission check
    path(page + "acls/", acl_views.acls_page, name="acls"),
    path(page + "check/", acl_views.check_page, name="acl_check"),
    path(page + "principals/<name:principal>/", acl_views.principal_page, name="principal"),
    path(api + "acls/", acl_api.Acls.as_view()),
    path(api + "acls/check/", acl_api.AclCheck.as_view()),
    # SCRAM users
    path(page + "users/", users_views.users_page, name="security_users"),
    path(api + "users/", users_api.ScramUserList.as_view()),
    path(api + "users/<name:user>/", users_api.ScramUserDetail.as_view()),
    # Quotas
    path(page + "quotas/", quotas_views.quotas_page, name="security_quotas"),
    path(api + "quotas/", quotas_api.QuotaList.as_view()),
    path(api + "quotas/effective/", quotas_api.EffectiveQuota.as_view()),
]
