"""The lease policy that keeps a worker out of good standing on verification from its questions (issue 33:
votes per image). Their votes count for nothing in the dynamic estimator's tables and
little in the weighted one, yet each is paid for and fills a place a good worker's vote would: on the hostile
crowd a fifth of the workers are spammers. Withholding them cut the votes per image through the platform by 12% to
38% on the hostile crowd and 6% to 22% on the default one (docs/consensus.md, *With the good-standing lease
policy*).

What is withheld is verification's questions (`image_verify`) in every dataset but those running Algorithm 1
(the standing is read from the kind-wide fit, across datasets, as the weighted estimator's rates are),
calibration questions included: a table counts only the votes of workers in good standing. Algorithm 1's
questions (its high-level `hierarchy` questions, and its leaves, asked as `image_verify` in the dataset running
it) reach every worker as before: on DET 200 (four seeds, the default crowd) the policy cost recall there (0.936
on seed 3 against 1.000 without it: a kind-wide fit read from good workers only grew surer of an early "no" than
the crowd's class-level errors allow) and, on two of the seeds, reviewer time (docs/consensus.md, *The
good-standing policy and Algorithm 1*). Gold still reaches them (a draw is the gold policy's own choice), so a
spammer is still caught and blocked by gold; `Standing.withholds` lets them back for a share of the kind's fits,
so a worker misjudged early climbs back; no worker is withheld while the kind has fewer than `WITHHOLD_MIN_GOOD`
workers in good standing, so a small team is never starved.

The standing is the one this process keeps with its fit (`reliability_fits.cached_standing`): reading it costs
no statement, so a lease of a worker in good standing costs what it cost before; a lease the policy withholds
from also looks up the datasets running Algorithm 1 (`algorithm_one_datasets`). A process that keeps no fit of the kind yet (under
`CACHE_MIN_VOTES` votes of it, or no vote submitted to it: a fresh gunicorn worker) withholds nothing until it
does.

The starved sweep asks the same policy who could still be handed a question (`LeaseRequest.look_ahead`), after
bringing its process's kept fits up to date (`starved.questions_starved`: a sweep's process submits no vote, and
with no fit kept it would see the withheld workers as able to take a question and wait for them for ever). There
a worker out of good standing counts as unable, explored share or not: a question that only such workers could
still answer is settled with the votes it has, as at the vote cap, instead of waiting for a draw that comes
only at the kind's next refit, which a finished crowd never brings."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation import queue
from annotation.models import Dataset

from .creation import TASK_KIND
from .models import Question, QuestionKind, Vote
from .reliability_fits import cached_standing, fit_with_standing
from .standing import GOOD_STANDING_MIN_J, WITHHOLD_MIN_GOOD

_EXPLORE_STREAM = 0x5747  # separates this policy's draws from gold's
# The kind whose questions a worker out of good standing is not offered, outside the datasets running Algorithm 1.
WITHHELD_KIND = QuestionKind.IMAGE_VERIFY


def lease_policy(worker, request: queue.LeaseRequest, now: datetime) -> queue.LeaseTerms | None:
    """Queue lease policy: the verification questions this lease of `worker` does not offer (every dataset's
    but those running Algorithm 1)."""
    if request.kinds_wanted and TASK_KIND not in request.kinds_wanted:
        return None
    kind = str(WITHHELD_KIND)
    kept = cached_standing(kind)
    if kept is None:
        return None
    standing, fit_clock = kept
    # The draw only for a worker it could withhold: a lease of a worker in good standing draws nothing. The
    # starved sweep's look-ahead counts no explored share: it cannot wait for the worker's next chance.
    if not standing.out_of_standing(worker.pk) or (
        not request.look_ahead
        and not standing.withholds(worker.pk, exploration_draw(worker.pk, kind, fit_clock))
    ):
        return None
    scope = [request.dataset_id] if request.dataset_id is not None else request.datasets
    return queue.LeaseTerms(
        withheld_topics_everywhere=frozenset({kind}),
        kept_in=frozenset((dataset_id, kind) for dataset_id in algorithm_one_datasets(scope)),
    )


def algorithm_one_datasets(among: Iterable[int] | None = None) -> list[int]:
    """The datasets running Algorithm 1 (holding a `hierarchy` question), of `among` when given (a lease scoped
    to a dataset, as the starved sweep's look-ahead is, asks about that one only): one index probe per dataset
    (the question's unique (dataset, kind, ...) index), run only on a lease the policy withholds from."""
    datasets = Dataset.objects.all() if among is None else Dataset.objects.filter(pk__in=list(among))
    return list(datasets.filter(_runs_algorithm_one("pk")).values_list("pk", flat=True))


def _runs_algorithm_one(dataset_ref: str) -> Exists:
    """Whether the dataset named by the outer row's `dataset_ref` holds a `hierarchy` question (runs Algorithm 1)."""
    return Exists(Question.objects.filter(dataset=OuterRef(dataset_ref), kind=QuestionKind.HIERARCHY))


def held_back(worker, now: datetime | None = None) -> bool:
    """Whether this process's leases keep from `worker` verification questions they could otherwise be given
    now: out of good standing under the process's kept fit (offered them on the explored share of fits all the
    same, and in the datasets running Algorithm 1), while some verification question waits that every other
    lease policy would let them take (a grant, a block, a qualification, an answer already given: the lease's own
    condition, `queue.available_tasks`) outside those datasets. A worker with nothing withheld from them (only
    Algorithm 1's datasets in reach, or no verification waiting) is not told they are. One statement, and only
    for a worker out of good standing."""
    kind = str(WITHHELD_KIND)
    kept = cached_standing(kind)
    if kept is None or not kept[0].out_of_standing(worker.pk):
        return False
    now = now or timezone.now()
    request = queue.LeaseRequest(kinds_wanted=(TASK_KIND,), dataset_id=None)
    others = queue.lease_terms(worker, request, now, leaving_out=lease_policy)
    return (
        queue.available_tasks(worker=worker, kinds_wanted=[TASK_KIND], now=now, terms=others)
        .filter(topic=kind)
        .exclude(_runs_algorithm_one("dataset_id"))
        .exists()
    )


@dataclass(frozen=True)
class WorkerStanding:
    worker_id: int
    username: str
    discrimination: float | None  # None: not fitted yet
    in_good_standing: bool
    withheld: bool


@dataclass(frozen=True)
class DatasetStanding:
    """What the organizer's standing view shows: the kind, the bar, whether the policy may withhold the
    dataset's questions of the kind now (not a dataset running Algorithm 1, and enough workers in good standing),
    and each worker who has a counted vote of the kind in it."""

    kind: str
    min_discrimination: float
    withholding: bool
    workers: list[WorkerStanding]


def dataset_standing(dataset_id: int) -> DatasetStanding:
    """Each worker's standing on verification under the kind-wide fit, for the workers with a counted vote of
    the kind in the dataset, and whether the policy keeps the dataset's verification questions from them (out of
    good standing on enough votes, while enough workers stand in it, outside Algorithm 1's datasets; a withheld
    worker is still offered them on the explored share of fits). Fits the kind if need be: an organizer's view,
    not a lease."""
    kind = str(WITHHELD_KIND)
    voters = (
        Vote.objects.filter(question__dataset_id=dataset_id, question__kind=kind, void__isnull=True)
        .values_list("worker_id", "worker__user__username")
        .distinct()
        .order_by("worker_id")
    )
    fitted = fit_with_standing(kind)
    if fitted is None:  # no vote of the kind yet: nobody judged, nobody withheld
        workers = [WorkerStanding(w, name, None, True, False) for w, name in voters]
        return DatasetStanding(kind, GOOD_STANDING_MIN_J, False, workers)
    standing = fitted[1]
    # `out_of_standing` already asks for enough workers in good standing; the dataset's own condition is Algorithm 1.
    applies = not algorithm_one_datasets([dataset_id])
    workers = []
    for worker_id, username in voters:
        j = standing.discrimination(worker_id)
        workers.append(
            WorkerStanding(
                worker_id=worker_id,
                username=username,
                discrimination=j,
                in_good_standing=j is None or j >= standing.min_j,
                withheld=applies and standing.out_of_standing(worker_id),
            )
        )
    return DatasetStanding(kind, standing.min_j, applies and standing.n_good >= WITHHOLD_MIN_GOOD, workers)


def exploration_draw(worker_id: int, kind: str, fit_clock: int) -> float:
    """The uniform draw that decides whether a worker out of good standing is offered the kind's questions
    anyway, seeded by the worker, the kind and the fit's vote clock: it holds while the fit does and is drawn
    anew at every refit (each time the kind's votes grow by `REFIT_GROWTH`), so such a worker is let back for
    about one fit in ten, long enough to add a few votes to their record, and a simulation replays exactly
    (no clock, no counter of the process's)."""
    stream = zlib.crc32(kind.encode())
    return float(np.random.default_rng([_EXPLORE_STREAM, stream, worker_id, fit_clock]).random())
