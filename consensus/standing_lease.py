"""The lease policy that keeps a worker out of good standing on an image-question kind from that kind's
questions (issue 33: votes per image). Their votes count for nothing in the dynamic estimator's tables and
little in the weighted one, yet each is paid for and fills a place a good worker's vote would: on the hostile
crowd a fifth of the workers are spammers. Withholding their leases cut the weighted estimator's votes per image
by 13% to 39% through the platform at the same precision (docs/consensus.md, *Who is asked*).

What is withheld is the kind's questions in every dataset (the standing is read from the kind-wide fit, across
datasets, as the weighted estimator's rates are), calibration questions included: a table counts only the votes
of workers in good standing. Gold still reaches them (a draw is the gold policy's own choice), so a spammer is
still caught and blocked by gold; `Standing.withholds` keeps a share of their leases open, so a worker misjudged
early climbs back; no worker is withheld while the kind has fewer than `WITHHOLD_MIN_GOOD` workers in good
standing, so a small team is never starved.

The standing is the one this process keeps with its fit (`reliability_fits.cached_standing`): reading it costs
no statement, so a lease costs what it cost before. A process that keeps no fit of the kind yet (under
`CACHE_MIN_VOTES` votes of it, or no vote submitted to it: a fresh gunicorn worker) withholds nothing until it
does."""

from __future__ import annotations

from datetime import datetime

import numpy as np

from annotation import queue

from .creation import TASK_KIND
from .estimates import EVIDENCE_KINDS
from .reliability_fits import cached_standing

_EXPLORE_STREAM = 0x5747  # separates this policy's draws from gold's


def lease_policy(worker, request: queue.LeaseRequest, now: datetime) -> queue.LeaseTerms | None:
    """Queue lease policy: the image-question kinds whose questions this lease of `worker` does not offer."""
    if request.kinds_wanted and TASK_KIND not in request.kinds_wanted:
        return None
    withheld = set()
    for kind in EVIDENCE_KINDS:
        standing = cached_standing(kind)
        if standing is None:
            continue
        if standing.withholds(worker.pk, lease_draw(worker.pk, now)):
            withheld.add(str(kind))
    return queue.LeaseTerms(withheld_topics_everywhere=frozenset(withheld)) if withheld else None


def lease_draw(worker_id: int, now: datetime) -> float:
    """The uniform draw one lease is explored by, seeded by the worker and the lease's time: not guessable from
    a count, and a retried lease draws anew."""
    return float(np.random.default_rng([_EXPLORE_STREAM, worker_id, int(now.timestamp() * 1e6)]).random())
