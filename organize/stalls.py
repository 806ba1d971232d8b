"""Why a dataset's work stopped, in words an organizer can act on (the dataset page's "Why work stopped" card).

A small crowd stalls silently otherwise: every worker sees "No tasks are waiting" while the progress bars say
"about 2 h left". Two causes are read from the data:

- *starved questions*: open questions that no worker who has worked in the dataset can take any more (each has
  answered it, is barred from it, blocked, or not qualified: `consensus.starved.questions_starved`, asked of
  the queue itself). Action: settle them now with the votes they have (as at the vote cap: accepted or rejected
  where the guarantee holds, else review), or invite more workers.
- *calibration short of voters*: calibration questions need `calibration_votes` votes from distinct workers
  before a synset's table exists and its production questions (waiting meanwhile) are asked; a crowd smaller
  than that never finishes calibration. Action: lower the calibration votes to the crowd's size, or invite.

Each stall names the stages it holds up, so the progress card shows no ETA for them."""

from __future__ import annotations

from django.db.models import Count, Q

from annotation.models import Assignment, Dataset, DatasetGrant
from consensus.models import ConsensusSettings, Question, QuestionRole, QuestionState
from consensus.starved import questions_starved
from crowd.models import InvitationRole, Worker
from gold.models import Block, GoldItem, GoldSettings, WorkerScore

from .crowd_fit import Crowd

# Pipeline stages (organize.progress keys) a question kind's stall holds up.
STAGE_OF_KIND = {
    "image_verify": "verification",
    "binary_vote": "verification",
    "hierarchy": "multilabel",
    "box_quality": "boxes_verified",
    "box_coverage": "boxes_covered",
}


def crowd_size(dataset: Dataset) -> int:
    """Distinct workers who have taken a task of the dataset."""
    return Assignment.objects.filter(task__dataset=dataset).values("worker_id").distinct().count()


def crowd_counts(dataset: Dataset) -> Crowd:
    """Who can vote in the dataset, for the settings page's warnings (`organize.crowd_fit`): the workers who have
    taken a task of it (as `crowd_size` counts them), accepted a worker invitation to it or were granted it
    (an invitation naming it among its datasets: `DatasetGrant`), less those blocked in it; and, when qualification is in force (a qualification size and gold items), how many of them have
    qualified on some question kind."""
    worked = set(
        Assignment.objects.filter(task__dataset=dataset).values_list("worker_id", flat=True).distinct()
    )
    invited = set(
        Worker.objects.filter(
            user__invitation__dataset=dataset, user__invitation__role=InvitationRole.WORKER
        ).values_list("pk", flat=True)
    )
    granted = set(DatasetGrant.objects.filter(dataset=dataset).values_list("worker_id", flat=True))
    blocked = set(Block.objects.filter(dataset=dataset).values_list("worker_id", flat=True))
    joined = (worked | invited | granted) - blocked
    gold = GoldSettings.for_dataset(dataset.pk)
    required = gold.qualification_size > 0 and GoldItem.objects.filter(dataset=dataset).exists()
    qualified = (
        WorkerScore.objects.filter(dataset=dataset, qualified=True, worker_id__in=joined)
        .values("worker_id")
        .distinct()
        .count()
        if required and joined
        else 0
    )
    return Crowd(joined=len(joined), qualified=qualified, qualification_required=required)


def dataset_stalls(dataset: Dataset) -> list[dict]:
    """The stalls of `dataset`, each {"code", "message", "count", "stages", "actions"}; [] when work can go on."""
    stalls: list[dict] = []
    starved = questions_starved(dataset_id=dataset.pk, idle_seconds=0)
    if starved:
        kinds = sorted({q.kind for q in starved})
        stalls.append(
            {
                "code": "starved_questions",
                "count": len(starved),
                "message": f"{len(starved)} open question{'s' if len(starved) != 1 else ''} "
                f"({', '.join(kinds)}) need a voter who has not answered yet, and no worker of this dataset "
                "can take them (each has answered, is blocked or is not qualified).",
                "stages": sorted({STAGE_OF_KIND.get(k, k) for k in kinds}),
                "actions": ["settle", "invite"],
            }
        )
    settings = ConsensusSettings.for_dataset(dataset.pk)
    counts = Question.objects.filter(dataset=dataset).aggregate(
        calibrating=Count("id", filter=Q(role=QuestionRole.CALIBRATION, state=QuestionState.OPEN)),
        waiting=Count("id", filter=Q(state=QuestionState.WAITING)),
    )
    crowd = crowd_size(dataset)
    if counts["calibrating"] and crowd < settings.calibration_votes:
        stalls.append(
            {
                "code": "calibration_short",
                "count": counts["calibrating"],
                "message": f"Calibration needs {settings.calibration_votes} distinct workers per question; "
                f"{crowd} {'has' if crowd == 1 else 'have'} worked in this dataset, so "
                f"{counts['calibrating']} calibration question{'s' if counts['calibrating'] != 1 else ''} "
                f"cannot finish and {counts['waiting']} question{'s' if counts['waiting'] != 1 else ''} "
                "wait for their tables.",
                "stages": ["verification"],
                "actions": ["lower_calibration_votes", "invite"],
                "crowd": crowd,
            }
        )
    return stalls
