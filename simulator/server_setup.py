"""What `simulate --server URL --organizer-token TOKEN` does through the API where an in-process run uses the
shell, so the server keeps a database of its own: worker and reviewer accounts from one-time invitations, the
hierarchy (whose leaves are the run's classes) by upload, and the full scenario's operator steps (overlap scan,
frozen split version) by their endpoints. Only HTTP: nothing here reads or writes a database."""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

from simulator.driver import Accounts
from simulator.transport import Reply, Transport

INVITATION_HOURS = 1
# How often a crowd waiting for the server's sweep looks at the dataset's open questions.
SWEEP_POLL_SECONDS = 5.0
# How often an operator waiting for the overlap checks to catch up looks at the count of boxes still unchecked.
SCAN_POLL_SECONDS = 0.5


class ServerSetupError(RuntimeError):
    pass


def _expect(reply: Reply, *statuses: int, what: str):
    if reply.status not in statuses:
        raise ServerSetupError(f"{what}: the server answered {reply.status}: {reply.data!r}")
    return reply.data


def api_accounts(
    transport: Transport, organizer_token: str, run_id: str, n_workers: int, dataset_id: int | None = None
) -> Accounts:
    """The run's workers and reviewer, each from an invitation to a dataset that holds the run's invitations
    (workers take tasks from every dataset; an invitation needs one), accepted with a fresh password. With
    `dataset_id` (`simulate --dataset`), the invitations are to that dataset and scoped to it: no dataset is
    made, and the simulated accounts can never take another dataset's tasks or review items."""
    scope: list[int] = []
    if dataset_id is not None:
        holder, scope = dataset_id, [dataset_id]
    else:
        holder = _expect(
            transport.call(
                "POST",
                "/api/v1/datasets/",
                token=organizer_token,
                json_body={
                    "name": f"sim-{run_id}-accounts",
                    "description": "the invitations of a simulated crowd",
                },
            ),
            201,
            what="creating the dataset that holds the invitations",
        )["id"]

    def account(role: str, username: str) -> str:
        issued = _expect(
            transport.call(
                "POST",
                f"/api/v1/datasets/{holder}/invitations",
                token=organizer_token,
                json_body={"role": role, "expires_in_hours": INVITATION_HOURS, "datasets": scope},
            ),
            201,
            what=f"inviting {username}",
        )
        accepted = _expect(
            transport.call(
                "POST",
                "/api/v1/invitations/accept",
                token=organizer_token,  # ignored: the invitation token is the credential
                json_body={
                    "token": issued["token"],
                    "username": username,
                    "password": secrets.token_urlsafe(18),
                },
            ),
            201,
            what=f"accepting the invitation of {username}",
        )
        return accepted["api_token"]

    workers = [account("workers", f"sim-{run_id}-w{i:04d}") for i in range(n_workers)]
    reviewer = account("reviewers", f"sim-{run_id}-reviewer")
    return Accounts(organizer_token=organizer_token, worker_tokens=workers, reviewer_token=reviewer)


def hierarchy_upload(transport: Transport, organizer_token: str, data: dict | Path) -> int:
    """Upload a hierarchy (a file or decoded JSON); a hierarchy the server holds already is a no-op."""
    body = json.loads(data.read_text()) if isinstance(data, Path) else data
    reply = transport.call("POST", "/api/v1/hierarchy-uploads", token=organizer_token, json_body=body)
    return _expect(reply, 200, 201, what="uploading the hierarchy")["hierarchy"]


class ApiOperator:
    """The full scenario's operator steps as an organizer does them in the browser: request an overlap scan and
    wait until every accepted box has been checked, compute and freeze a split version."""

    def __init__(
        self,
        transport: Transport,
        organizer_token: str,
        splits: dict,
        scan_wait: float = 30.0,
        sweep_wait: float = 0.0,
        poll: float = SWEEP_POLL_SECONDS,
    ) -> None:
        self.transport = transport
        self.token = organizer_token
        self.splits = splits
        self.scan_wait = scan_wait
        self.sweep_wait = sweep_wait
        self.poll = poll

    def _call(self, method: str, path: str, **kwargs) -> Reply:
        return self.transport.call(method, path, token=self.token, **kwargs)

    def dataset_id(self, name: str) -> int:
        page = 1
        while True:
            data = _expect(
                self._call("GET", "/api/v1/datasets/", params={"page": page}), 200, what="datasets"
            )
            for row in data["results"]:
                if row["name"] == name:
                    return row["id"]
            if not data.get("next"):
                raise ServerSetupError(f"no dataset named {name!r} on the server")
            page += 1

    def scan_overlaps(self, dataset_name: str) -> None:
        """Bring the review queue up to date before it is worked: request a scan (the server runs it at once,
        or a scan already queued covers it) and wait until the server says no accepted box awaits its overlap
        check (`unchecked_boxes`; each box is checked when its acceptance commits, so usually at once), or the
        wait runs out."""
        path = f"/api/v1/datasets/{self.dataset_id(dataset_name)}/review"
        deadline = time.monotonic() + self.scan_wait
        state = _expect(self._call("POST", path), 202, what="requesting the overlap scan")
        while state["unchecked_boxes"] and time.monotonic() < deadline:
            time.sleep(SCAN_POLL_SECONDS)
            state = _expect(self._call("GET", path), 200, what="reading the review queue")

    def sweep_stuck(self, dataset_name: str) -> int:
        """Against a server the sweep for questions nobody can answer is the server's own schedule
        (`review.tasks.stuck_enqueue`: beat, or `runserver` itself in the embedded default), after
        `CROWDLABEL_STARVED_AFTER_SECONDS`; there is no API to run it at once. The crowd has run dry: with
        `sweep_wait`, wait as people would come back later, until some question open now has left the open
        state (settled, or sent to review), and return how many did; 0 when none is open or the wait ran out."""
        if self.sweep_wait <= 0:
            return 0
        dataset_id = self.dataset_id(dataset_name)
        waiting = self._open_questions(dataset_id)
        deadline = time.monotonic() + self.sweep_wait
        while waiting and time.monotonic() < deadline:
            time.sleep(self.poll)
            moved = waiting - self._open_questions(dataset_id)
            if moved:
                return len(moved)
        return 0

    def background_awaited(self, dataset_name: str) -> int:
        """A server's background work runs on its own Celery workers and relay; `sweep_stuck`'s wait covers
        what it reopens. Nothing to wait for here."""
        return 0

    def _open_questions(self, dataset_id: int) -> set[int]:
        found: set[int] = set()
        page = 1
        while True:
            data = _expect(
                self._call(
                    "GET", f"/api/v1/datasets/{dataset_id}/decisions/", params={"state": "open", "page": page}
                ),
                200,
                what="open questions",
            )
            found |= {row["id"] for row in data["results"]}
            if not data.get("next"):
                return found
            page += 1

    def make_splits(self, dataset_name: str, seed: int) -> None:
        path = f"/api/v1/datasets/{self.dataset_id(dataset_name)}/split-versions"
        version = _expect(
            self._call("POST", path, json_body={**self.splits, "seed": seed}),
            201,
            what="computing the splits",
        )
        _expect(
            self._call("POST", f"{path}/{version['number']}/freeze"), 200, what="freezing the split version"
        )
