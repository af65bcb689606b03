"""Routes of Kafka's own security: ACLs and the effective-permission check, SCRAM users, quotas."""

from django.urls import URLPattern, path  # noqa: F401 - the sections below add their routes

page = "clusters/<str:cluster>/security/"
api = "api/v1/clusters/<str:cluster>/"

urlpatterns: list[URLPattern] = [
    # ACLs and the effective-permission check
    # SCRAM users
    # Quotas
]
