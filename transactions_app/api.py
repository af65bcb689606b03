"""REST API of transactions: the list (hanging ones first) and the abort of a hanging one (admin)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import gateway
from console.api_edge import Body, StrictCharField, validated
from transactions_app import services


class TransactionAbortBody(Body):
    confirm = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=services.MAX_ID_LENGTH,
                              help_text="The transactional id, typed again.")


class TransactionList(APIView):
    actions = {"GET": "transactions.view"}

    @extend_schema(responses=OpenApiTypes.OBJECT,
                   summary="Transactional ids under `transactions` (hanging first): state, producer id and epoch, timeout, "
                           "start, partitions with their LSO, high watermark and producers, `hanging` and the groups it blocks")
    def get(self, request: Request, cluster: str) -> Response:
        gateway.cluster_config(cluster)
        return Response({"transactions": services.list_transactions(cluster)})


class TransactionAbort(APIView):
    actions = {"POST": "transactions.abort"}

    @extend_schema(request=TransactionAbortBody, responses=OpenApiTypes.OBJECT,
                   summary="Abort a hanging transaction (abort markers on its partitions, as `kafka-transactions abort`)")
    def post(self, request: Request, cluster: str, transactional_id: str) -> Response:
        d = validated(TransactionAbortBody, request)
        gateway.cluster_config(cluster)
        return Response(services.abort(request.user, cluster, transactional_id, d["confirm"]))
