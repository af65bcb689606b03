"""REST API of transactions: the list (hanging ones first), the abort of a hanging one (admin) and a
topic's producers."""

from __future__ import annotations

import orjson
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import gateway
from console.api_edge import Body, StrictCharField, validated
from transactions_app import producers, services


class TransactionAbortBody(Body):
    confirm = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=services.MAX_ID_LENGTH,
                              help_text="The transactional id, typed again.")


class TransactionList(APIView):
    actions = {"GET": "transactions.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="Transactional ids under `transactions` (hanging first, then open, then closed): state, producer id and epoch, timeout, "
                           "start, partitions with their LSO, high watermark and producers, `hanging` and the groups it blocks",
                   description="From the watcher's last look (every TRANSACTION_POLL_INTERVAL seconds, `poll_interval`): "
                               "`as_of` is its time (epoch seconds), `source` `watcher`; with none stored, Kafka is asked "
                               "(`source` `kafka`). An abort through the console shows in the next answer.")
    def get(self, request: Request, cluster: str) -> HttpResponse:
        gateway.cluster_config(cluster)
        found = services.transactions(cluster)
        # (written as bytes: the closed rows go out as stored, never decoded, see transactions_app/listing.py)
        head = orjson.dumps({"as_of": found.as_of, "source": "watcher" if found.from_watcher else "kafka",
                             "poll_interval": found.every})
        return HttpResponse(head[:-1] + b',"transactions":' + found.json_rows() + b"}", content_type="application/json")


class TransactionAbort(APIView):
    actions = {"POST": "transactions.abort"}

    @extend_schema(request=TransactionAbortBody, responses=OpenApiTypes.OBJECT,
                   summary="Abort a hanging transaction (abort markers on its partitions, as `kafka-transactions abort`)")
    def post(self, request: Request, cluster: str, transactional_id: str) -> Response:
        d = validated(TransactionAbortBody, request)
        gateway.cluster_config(cluster)
        return Response(services.abort(request.user, cluster, transactional_id, d["confirm"]))


class TopicProducers(APIView):
    actions = {"GET": "topic.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="A topic's active producers per partition (DescribeProducers, as `kafka-transactions describe-producers`)",
                   description="Under `partitions`, each partition with its `producers`: producer id and epoch, last sequence, "
                               "last timestamp (ms, null when unknown), coordinator epoch and `current_txn_start_offset` (the "
                               "first offset of its open transaction there, null when none) and `answered` (false when its leader did "
                               "not answer; `unanswered` lists those partitions). Read from the leaders now.")
    def get(self, request: Request, cluster: str, topic: str) -> Response:
        gateway.cluster_config(cluster)
        return Response(producers.topic_producers(cluster, topic))
