"""Routes of transactions: the page (list, abort) and the API."""

from django.urls import URLPattern, path

from transactions_app import api, views

urlpatterns: list[URLPattern] = [
    path("clusters/<str:cluster>/transactions/", views.transactions_page, name="transactions"),
    path("api/v1/clusters/<str:cluster>/transactions/", api.TransactionList.as_view()),
    path("api/v1/clusters/<str:cluster>/transactions/<name:transactional_id>/abort/", api.TransactionAbort.as_view()),
]
