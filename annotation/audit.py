"""The dataset audit trail: one append-only row per organizer action that starts work or changes how it is done."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder

from .models import AuditEntry, Dataset


def _plain(data: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-safe copy: model instances become their string, querysets and tuples lists of them."""
    import json

    return json.loads(json.dumps(dict(data), cls=DjangoJSONEncoder, default=str))


def audit_record(
    *, dataset: Dataset, actor, action: str, parameters: Mapping[str, Any], result: Mapping[str, Any] = ()
) -> AuditEntry:
    return AuditEntry.objects.create(
        dataset=dataset,
        actor=actor,
        action=action,
        parameters=_plain(parameters),
        result=_plain(dict(result)),
    )


def request_parameters(data: Mapping[str, Any]) -> dict[str, Any]:
    """An organizer request's validated parameters as the audit shows them: an explicit image list is kept as
    its length (it may hold 200,000 ids), absent means every image of the dataset."""
    params = {key: value for key, value in data.items() if key != "images"}
    params["images"] = len(data["images"]) if "images" in data else "all"
    return params
