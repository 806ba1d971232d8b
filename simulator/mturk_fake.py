"""A Mechanical Turk marketplace in memory, standing in for boto3's `mturk` client at the network edge only
(the simulator's `--provider mturk-fake`): the platform's own MTurk code runs unchanged against it.

Every call is checked against botocore's real MTurk service model (ParamValidationError for a parameter MTurk
would refuse), and the fake keeps the rules the platform relies on: a UniqueRequestToken is used once,
GetAssignment answers only for Submitted, Approved or Rejected assignments, an assignment is approved or
rejected once and only when Submitted, a worker takes one assignment per HIT, and a HIT is deleted only when
Reviewable with nothing left to decide. The workers' side (accept, return, the externalSubmit form) is here
too, as MTurk's worker site would do it. It also counts every call, so a run can show that nothing was paid
twice.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import botocore.session
from botocore import xform_name
from botocore.exceptions import ClientError, ParamValidationError
from botocore.validate import ParamValidator

_model = botocore.session.get_session().get_service_model("mturk")
_operations = {xform_name(name): name for name in _model.operation_names}

SUBMIT_PATH = "/mturk/externalSubmit"


def _error(operation: str, message: str, code: str = "RequestError") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@dataclass
class FakeAssignment:
    assignment_id: str
    hit_id: str
    worker_id: str
    status: str = "Accepted"  # Accepted, Returned (worker side only), Submitted, Approved, Rejected
    accepted_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    submitted_at: datetime | None = None
    answer: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "AssignmentId": self.assignment_id,
            "WorkerId": self.worker_id,
            "HITId": self.hit_id,
            "AssignmentStatus": self.status,
            "AcceptTime": self.accepted_at,
            "Answer": json.dumps(self.answer),
        }
        if self.submitted_at is not None:
            out["SubmitTime"] = self.submitted_at
        return out


@dataclass
class FakeHit:
    hit_id: str
    hit_type_id: str
    max_assignments: int
    annotation: str
    question: str
    expired: bool = False
    deleted: bool = False


class FakeMturk:
    """The boto3-shaped requester API (the calls the platform makes) plus the worker site's actions."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._run = secrets.token_hex(4).upper()  # ids unique across runs, as MTurk's are
        self.hit_types: dict[str, dict] = {}
        self.hits: dict[str, FakeHit] = {}
        self.assignments: dict[str, FakeAssignment] = {}
        self.request_tokens: dict[str, str] = {}  # UniqueRequestToken -> what it made
        self.bonuses: list[tuple[str, str, str]] = []  # (worker, assignment, amount)
        self.blocks: set[str] = set()
        self.qualification_types: dict[str, str] = {}  # id -> name
        self.qualified: set[tuple[str, str]] = set()  # (type id, worker)
        self.calls: Counter[str] = Counter()

    # -- plumbing ------------------------------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{self._run}{next(self._ids):08d}"

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in _operations:
            raise AttributeError(name)
        operation = _operations[name]
        handler = getattr(type(self), f"_op_{name}", None)
        if handler is None:
            raise NotImplementedError(f"the fake MTurk does not implement {operation}")

        def invoke(**params):
            report = ParamValidator().validate(params, _model.operation_model(operation).input_shape)
            if report.has_errors():
                raise ParamValidationError(report=report.generate_report())
            with self._lock:
                self.calls[name] += 1
                return handler(self, **params)

        return invoke

    def _token(self, operation: str, token: str | None, made: str) -> None:
        if token is None:
            return
        if token in self.request_tokens:
            raise _error(
                operation,
                f"The value for UniqueRequestToken {token} has already been used: requests must be unique.",
            )
        self.request_tokens[token] = made

    def _assignment(self, operation: str, assignment_id: str, *statuses: str) -> FakeAssignment:
        found = self.assignments.get(assignment_id)
        if found is None or found.status not in statuses:
            raise _error(operation, f"This operation can be called with a status of: {', '.join(statuses)}")
        return found

    # -- the requester API ---------------------------------------------------------------------------------

    def _op_create_hit_type(self, **params):
        key = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()
        self.hit_types.setdefault(key, {"HITTypeId": self._new_id("HT"), **params})
        return {"HITTypeId": self.hit_types[key]["HITTypeId"]}

    def _op_create_hit_with_hit_type(
        self,
        *,
        HITTypeId,
        MaxAssignments,
        LifetimeInSeconds,
        Question,
        RequesterAnnotation="",
        UniqueRequestToken=None,
        **_,
    ):
        if HITTypeId not in {t["HITTypeId"] for t in self.hit_types.values()}:
            raise _error("CreateHITWithHITType", f"HIT type {HITTypeId} does not exist")
        hit = FakeHit(self._new_id("HIT"), HITTypeId, MaxAssignments, RequesterAnnotation, Question)
        self._token("CreateHITWithHITType", UniqueRequestToken, hit.hit_id)
        self.hits[hit.hit_id] = hit
        return {"HIT": self._hit_dict(hit)}

    def _hit_status(self, hit: FakeHit) -> str:
        taken = [a for a in self.assignments.values() if a.hit_id == hit.hit_id and a.status != "Returned"]
        if hit.deleted:
            return "Disposed"
        if any(a.status == "Accepted" for a in taken):
            return "Unassignable" if hit.expired or len(taken) >= hit.max_assignments else "Assignable"
        return "Reviewable" if hit.expired or len(taken) >= hit.max_assignments else "Assignable"

    def _hit_dict(self, hit: FakeHit) -> dict[str, Any]:
        mine = [a for a in self.assignments.values() if a.hit_id == hit.hit_id]
        pending = sum(1 for a in mine if a.status == "Accepted")
        done = sum(1 for a in mine if a.status in ("Submitted", "Approved", "Rejected"))
        return {
            "HITId": hit.hit_id,
            "HITTypeId": hit.hit_type_id,
            "HITStatus": self._hit_status(hit),
            "MaxAssignments": hit.max_assignments,
            "RequesterAnnotation": hit.annotation,
            "NumberOfAssignmentsPending": pending,
            "NumberOfAssignmentsCompleted": done,
            "NumberOfAssignmentsAvailable": max(0, hit.max_assignments - pending - done),
        }

    def _op_list_hits(self, *, MaxResults=10, NextToken=None):
        live = [h for h in self.hits.values() if not h.deleted]
        start = int(NextToken or 0)
        page = live[start : start + MaxResults]
        out: dict[str, Any] = {"HITs": [self._hit_dict(h) for h in page], "NumResults": len(page)}
        if start + MaxResults < len(live):
            out["NextToken"] = str(start + MaxResults)
        return out

    def _op_get_hit(self, *, HITId):
        hit = self.hits.get(HITId)
        if hit is None or hit.deleted:
            raise _error("GetHIT", f"HIT {HITId} does not exist")
        return {"HIT": self._hit_dict(hit)}

    def _op_get_assignment(self, *, AssignmentId):
        found = self._assignment("GetAssignment", AssignmentId, "Submitted", "Approved", "Rejected")
        return {"Assignment": found.as_dict(), "HIT": self._hit_dict(self.hits[found.hit_id])}

    def _op_list_assignments_for_hit(self, *, HITId, MaxResults=10, NextToken=None, AssignmentStatuses=None):
        wanted = set(AssignmentStatuses or ("Submitted", "Approved", "Rejected"))
        rows = [a for a in self.assignments.values() if a.hit_id == HITId and a.status in wanted]
        start = int(NextToken or 0)
        page = rows[start : start + MaxResults]
        out: dict[str, Any] = {"Assignments": [a.as_dict() for a in page], "NumResults": len(page)}
        if start + MaxResults < len(rows):
            out["NextToken"] = str(start + MaxResults)
        return out

    def _op_approve_assignment(self, *, AssignmentId, RequesterFeedback=None, OverrideRejection=False):
        self._assignment("ApproveAssignment", AssignmentId, "Submitted").status = "Approved"
        return {}

    def _op_reject_assignment(self, *, AssignmentId, RequesterFeedback):
        self._assignment("RejectAssignment", AssignmentId, "Submitted").status = "Rejected"
        return {}

    def _op_send_bonus(self, *, WorkerId, BonusAmount, AssignmentId, Reason, UniqueRequestToken=None):
        found = self._assignment("SendBonus", AssignmentId, "Approved", "Submitted", "Rejected")
        if found.worker_id != WorkerId:
            raise _error("SendBonus", "the assignment does not belong to this worker")
        self._token("SendBonus", UniqueRequestToken, AssignmentId)
        self.bonuses.append((WorkerId, AssignmentId, BonusAmount))
        return {}

    def _op_create_worker_block(self, *, WorkerId, Reason):
        self.blocks.add(WorkerId)
        return {}

    def _op_update_expiration_for_hit(self, *, HITId, ExpireAt):
        hit = self.hits.get(HITId)
        if hit is None or hit.deleted:
            raise _error("UpdateExpirationForHIT", f"HIT {HITId} does not exist")
        hit.expired = hit.expired or ExpireAt <= datetime.now(UTC)
        return {}

    def _op_delete_hit(self, *, HITId):
        hit = self.hits.get(HITId)
        if hit is None or hit.deleted:
            raise _error("DeleteHIT", f"HIT {HITId} does not exist")
        waiting = any(a.hit_id == HITId and a.status == "Submitted" for a in self.assignments.values())
        if self._hit_status(hit) != "Reviewable" or waiting:
            raise _error(
                "DeleteHIT", "This HIT is currently in the state 'Unassignable' or has assignments to review"
            )
        hit.deleted = True
        return {}

    def _op_create_qualification_type(self, *, Name, Description, QualificationTypeStatus, **_):
        if Name in self.qualification_types.values():
            raise _error(
                "CreateQualificationType", "You have already created a QualificationType with this name."
            )
        type_id = self._new_id("QT")
        self.qualification_types[type_id] = Name
        return {"QualificationType": {"QualificationTypeId": type_id, "Name": Name}}

    def _op_list_qualification_types(
        self, *, MustBeRequestable, Query=None, MaxResults=10, NextToken=None, **_
    ):
        rows = [
            {"QualificationTypeId": k, "Name": v}
            for k, v in self.qualification_types.items()
            if not Query or Query.lower() in v.lower()
        ]
        return {"QualificationTypes": rows, "NumResults": len(rows)}

    def _op_associate_qualification_with_worker(self, *, QualificationTypeId, WorkerId, **_):
        if QualificationTypeId not in self.qualification_types:
            raise _error("AssociateQualificationWithWorker", "no such qualification type")
        self.qualified.add((QualificationTypeId, WorkerId))
        return {}

    # -- the workers' side (MTurk's worker site) -----------------------------------------------------------

    def accept(self, worker_id: str) -> FakeAssignment | None:
        """The worker accepts an assignment of the first HIT open to them (one per HIT per worker)."""
        with self._lock:
            if worker_id in self.blocks:
                return None
            for hit in self.hits.values():
                if hit.deleted or hit.expired or self._hit_status(hit) != "Assignable":
                    continue
                if any(
                    a.hit_id == hit.hit_id and a.worker_id == worker_id and a.status != "Returned"
                    for a in self.assignments.values()
                ):
                    continue
                found = FakeAssignment(self._new_id("A"), hit.hit_id, worker_id)
                self.assignments[found.assignment_id] = found
                return found
            return None

    def give_back(self, assignment_id: str) -> None:
        """The worker returns the assignment unfinished: its slot opens for someone else."""
        with self._lock:
            found = self.assignments[assignment_id]
            if found.status == "Accepted":
                found.status = "Returned"

    def external_submit(self, url: str, fields: dict[str, str]) -> None:
        """The task page's form arriving at MTurk: only at MTurk's externalSubmit path, only for an
        accepted assignment."""
        with self._lock:
            if not url.endswith(SUBMIT_PATH):
                raise ValueError(f"the task page posted to {url!r}, not to MTurk's externalSubmit")
            found = self.assignments.get(fields.get("assignmentId", ""))
            if found is None or found.status != "Accepted":
                raise ValueError(f"externalSubmit for an assignment that is not accepted: {fields!r}")
            found.status, found.submitted_at, found.answer = "Submitted", datetime.now(UTC), dict(fields)

    def report(self) -> dict[str, int]:
        """What happened on the marketplace: assignments by status, what was paid and how often each paying
        call was made (a second approval or bonus of one assignment would show here)."""
        with self._lock:
            statuses = Counter(a.status for a in self.assignments.values())
            bonus_per_assignment = Counter(a for _, a, _ in self.bonuses)
            return {
                "hits": len(self.hits),
                "hits_deleted": sum(1 for h in self.hits.values() if h.deleted),
                "assignments_submitted": sum(statuses[s] for s in ("Submitted", "Approved", "Rejected")),
                "assignments_approved": statuses["Approved"],
                "assignments_rejected": statuses["Rejected"],
                "assignments_waiting": statuses["Submitted"],
                "assignments_returned": statuses["Returned"],
                "approve_calls": self.calls["approve_assignment"],
                "reject_calls": self.calls["reject_assignment"],
                "bonuses_paid": len(self.bonuses),
                "bonus_calls": self.calls["send_bonus"],
                "assignments_paid_twice": sum(1 for n in bonus_per_assignment.values() if n > 1),
                "workers_qualified": len(self.qualified),
            }
