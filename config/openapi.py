"""The error answers every API operation can give, added to the generated OpenAPI schema (a drf-spectacular
post-processing hook), so the schema documents each status code the API really sends and its body's shape; and
a fix of field defaults that drf-spectacular places where a validator refuses them."""

from __future__ import annotations

ERROR = {
    "type": "object",
    "description": "A refusal a person can act on: `detail` says why.",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
VALIDATION_ERROR = {
    "description": "The request was well formed but refused: messages per field (or `detail`, or a list of "
    "messages when the body as a whole is wrong).",
    "anyOf": [
        {"type": "object", "additionalProperties": {}},
        {"type": "array", "items": {"type": "string"}},
    ],
}
REF_ERROR = {"$ref": "#/components/schemas/Error"}
REF_VALIDATION_ERROR = {"$ref": "#/components/schemas/ValidationError"}

# status: (description, schema); every operation can answer these.
COMMON = {
    "400": (
        "Invalid input (a body, query parameter or reference that cannot be used).",
        REF_VALIDATION_ERROR,
    ),
    "401": ("Not signed in: no credentials, or credentials that are not valid.", REF_ERROR),
    "403": ("Signed in, but the caller's role may not use this operation.", REF_ERROR),
    "404": ("No such object among those the caller may see.", REF_ERROR),
    "429": ("Too many requests: wait for the seconds in `Retry-After`.", REF_ERROR),
    "503": (
        "Busy: the database kept conflicting with concurrent work (a submit is run again up to 3 times first) "
        "or a service is down; send the same request again (the same Idempotency-Key) after `Retry-After`.",
        REF_ERROR,
    ),
}
# Operations that take a body can also be refused for its size or type, or conflict with the current state.
WITH_BODY = {
    "409": (
        "Conflicts with the object's current state (e.g. already submitted or already frozen).",
        REF_ERROR,
    ),
    "413": ("The request body is larger than the API accepts.", REF_ERROR),
    "415": ("The body's media type is not one this operation reads.", REF_ERROR),
}
METHODS = ("get", "post", "put", "patch", "delete")


def _json(description: str, schema: dict) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _widen(response: dict, schema: dict) -> None:
    """An operation that documents its own body for an error status may still send the common one (e.g. an
    upload's report of rejected files, or a field error from the form before any file is read)."""
    content = response.setdefault("content", {})
    media = content.setdefault("application/json", {})
    own = media.get("schema")
    media["schema"] = schema if own is None else {"anyOf": [own, schema]}


def document_error_responses(result, generator, request, public):
    """drf-spectacular post-processing hook: add the common error responses to every operation."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR
    schemas["ValidationError"] = VALIDATION_ERROR
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            responses = operation.setdefault("responses", {})
            wanted = dict(COMMON)
            if "requestBody" in operation or method in ("post", "put", "patch"):
                wanted.update(WITH_BODY)
            if not operation.get("security") or operation["security"] == [{}]:
                wanted.pop("401")  # public: no credentials are ever asked for
            for code, (description, schema) in wanted.items():
                if code in responses:
                    _widen(responses[code], schema)
                else:
                    responses[code] = _json(description, schema)
    return result


def defaults_outside_branches(result, generator, request, public):
    """drf-spectacular post-processing hook: a blank-allowed pattern field with a default
    (``SlugField(allow_blank=True, default="")``) comes out as ``oneOf: [{pattern, default: ''}, {maxLength: 0}]``,
    the default inside the branch it breaks, which schema validators refuse. The default belongs to the field,
    where the whole ``oneOf`` admits it."""
    for schema in result.get("components", {}).get("schemas", {}).values():
        for field in (schema.get("properties") or {}).values():
            for branch in field.get("oneOf", ()):
                if "default" in branch:
                    field.setdefault("default", branch.pop("default"))
    return result
