"""Routes of transactions: the page (list, abort), a topic's producers and the API."""

from django.urls import URLPattern, path

from transactions_app import api, views

urlpatterns: list[URLPattern] = [
    path("clusters/<str:cluster>/transactions/", views.transactions_page, name="transactions"),
    path("api/v1/clusters/<str:cluster>/transactions/", api.TransactionList.as_view()),
    path("api/v1/clusters/<str:cluster>/transactions/<name:transactional_id>/abort/", api.TransactionAbort.as_view()),
    path("clusters/<str:cluster>/topics/<str:topic>/producers/", views.topic_producers_page, name="topic_producers"),
    path("api/v1/clusters/<str:cluster>/topics/<str:topic>/producers/", api.TopicProducers.as_view()),
]
