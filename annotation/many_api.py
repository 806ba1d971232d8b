"""The worker's batch of answers: several submits in one request and one transaction, each with its own
Idempotency-Key and its own result (`annotation.queue.many`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.dbconnection import idempotent_by_item_keys
from config.roles import IsWorker

from . import queue
from .serializers import AssignmentSerializer, SubmitManyResponseSerializer, SubmitManySerializer


class SubmitManyView(APIView):
    """Submit several answers at once."""

    permission_classes = [IsAuthenticated, IsWorker]

    @extend_schema(
        operation_id="v1_assignments_submit_many",
        request=SubmitManySerializer,
        responses={200: SubmitManyResponseSerializer},
        description=f"Store 1 to {queue.MANY_MAX} answers in one transaction, each exactly as "
        "`assignments/{id}/submit` stores one under its own `idempotency_key`, and answer per answer, in the "
        "order sent: `status` 200 and code `stored` with the stored assignment as `result`, or the refusal the "
        "single submit would give (400 `answer_invalid`, 404 `not_found` for an unknown assignment or another "
        "worker's, 409 `lease_expired` or `already_submitted`); a refused answer changes nothing and the others "
        "are stored. Sent again with the same keys, the batch stores nothing twice and each answer gets the "
        "result it got before (`replayed` true for those stored before). A body that is not a list of "
        "well-formed answers is refused whole (400 naming the field).",
    )
    @idempotent_by_item_keys
    def post(self, request):
        form = SubmitManySerializer(data=request.data)
        form.is_valid(raise_exception=True)
        answers = [
            queue.Answer(item["assignment"], item["answer"], item["idempotency_key"])
            for item in form.validated_data["answers"]
        ]
        results = queue.assignments_submit_many(worker=request.user.worker, answers=answers)
        return Response({"results": [_result_view(r) for r in results]})


def _result_view(outcome: queue.AnswerResult) -> dict:
    stored = outcome.result
    return {
        "assignment": outcome.answer.assignment_id,
        "idempotency_key": outcome.answer.idempotency_key,
        "status": outcome.status,
        "code": outcome.code,
        "detail": outcome.detail,
        "replayed": stored is not None and stored.replayed,
        "result": {**AssignmentSerializer(stored.assignment).data, **stored.extras} if stored else None,
    }
