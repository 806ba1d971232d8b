"""How a hierarchy question reaches the crowd and how its decision comes back: the one place that knows which
engine decides it. The labeling service calls `questions_open`; the engine calls `labeling_answer` once decided.

- `consensus` (default): a consensus question about the node's concept, decided by the calibrated stopping rule:
  kind `hierarchy` for high-level questions, which favours "yes" (a conservative reject threshold: a false "no"
  prunes a whole subtree, ILSVRC §3.3.3), and kind `image_verify` for leaves, decided symmetrically. A question
  sent to review at the vote cap waits for the reviewer, whose verdict arrives as the question's decision.
  Decisions arrive through `consensus.events` (`question_decided` below).
- `vote`: one consensus question per (labeling, node), of the same kinds, carrying a sequential yes-biased
  vote as its rule (a margin policy, `HIGH_LEVEL` and `LEAF` below) and served as a `hierarchy_question` task
  (multilabel/question_kind.py); no calibration, so it costs fewer votes on a young dataset. Its round is the
  labeling's id: each labeling asks its own (the consensus engine's questions are round 0, shared). Decided
  by the same engine, its decision arrives through `consensus.events` too and answers its own labeling.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotation.models import Dataset, Image
from consensus import events as consensus_events
from consensus.count_questions import count_questions_create
from consensus.creation import Target, questions_create
from consensus.estimates import REJECT_ERROR_KEY, TARGET_PRECISION_KEY
from consensus.models import Question, QuestionKind, QuestionState
from consensus.stopping import MarginPolicy, rule_of
from hierarchy.graph import HierarchyGraph, graph_for

from .models import ImageLabeling, LabelingStatus, QuestionEngine

TASK_KIND = "hierarchy_question"
# The `vote` engine's rules. One answer wins when it leads the other by its margin. A false "no" on a high-level
# question prunes a whole subtree unasked (ILSVRC §3.3.3), while a false "yes" only costs the questions below
# it, so "no" needs a larger lead than "yes" there, and a question still open at the vote cap is decided "yes".
# Leaves need a lead of 3 either way: at ~15% wrong votes (10% spammers among the crowd) that keeps both errors
# near 0.5% per question.
HIGH_LEVEL = MarginPolicy(yes_margin=2, no_margin=3, max_votes=7, at_cap=True)
LEAF = MarginPolicy(yes_margin=3, no_margin=3, max_votes=9, at_cap=True)
# A consensus question answers Algorithm 1 once accepted or rejected; one in review waits for its reviewer.
ANSWERED = (QuestionState.ACCEPTED, QuestionState.REJECTED)
# The accept threshold of a leaf question. Honest workers confuse sibling classes on the same image (a cat where
# there is a dog, a bus where there is a car): those errors are not independent, so the posterior of a leaf
# "yes" overstates it. In the hostile seed-1 run every wrong leaf "yes" was such a sibling, accepted at
# P 0.995-0.9985 on 4 to 11 votes; asking one more vote of a leaf about to be accepted costs ~1.6 votes per image.
LEAF_TARGET_PRECISION = 0.9995
# The reject threshold of a leaf question. An image is asked about every leaf under each present parent, so
# rejected leaves outnumber present ones almost two to one (hostile seed-2 run: 440 leaf rejects against 248
# present classes in 100 images): at the dataset's 0.02 a reject's share of misses alone cost 3 points of recall
# (7 true classes rejected at P 0.003-0.015, most at 0 or 1 yes against 2 or 3 no). 0.005 still lost present
# classes on 1 yes against 2 no (P 0.0034 and 0.0045, DET 200 seed 2): see INNER_REJECT_ERROR.
LEAF_REJECT_ERROR = 0.001
# The reject threshold of a high-level question: a wrong "no" drops every class under it unasked. Each reject
# is counted in recall, and an image asks far more than it shows (DET 200, seed 2: 1,021 high-level rejects
# and 658 leaf rejects against 157 present classes in 80 images), so the expected misses are the sum of P over
# every reject: at the hierarchy kind's 0.003 and the leaves' 0.005, 2 high-level and 3 leaf rejects of present
# classes, most on 2 or 3 votes (recall 0.975; 0.955 on a run beside it). Each costs about one more vote on a
# clear negative.
INNER_REJECT_ERROR = 0.001


def questions_open(
    graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int = 0
) -> None:
    """Put question `node_id` about the labeling's image to the crowd, for each (labeling, node_id)."""
    by_engine: dict[str, list[tuple[ImageLabeling, str]]] = {}
    for labeling, node_id in asks:
        by_engine.setdefault(labeling.engine, []).append((labeling, node_id))
    _open_vote_questions(graph, by_engine.pop(QuestionEngine.VOTE, []), priority)
    _open_consensus_questions(graph, by_engine.pop(QuestionEngine.CONSENSUS, []), priority)
    if by_engine:
        raise ValueError(f"unknown question engine(s): {sorted(by_engine)}")


def _subject(graph: HierarchyGraph, labeling: ImageLabeling, node_id: str) -> dict:
    subject = {
        "question": graph.nodes[node_id].question,
        "node": node_id,
        "hierarchy": graph.hierarchy_id,
        "dag": graph.dag.fingerprint,
        "labeling": labeling.pk,
    }
    if graph.nodes[node_id].leaf:
        subject[TARGET_PRECISION_KEY] = LEAF_TARGET_PRECISION
        subject[REJECT_ERROR_KEY] = LEAF_REJECT_ERROR
    else:
        subject[REJECT_ERROR_KEY] = INNER_REJECT_ERROR
    return subject


def _asks_grouped(asks: Sequence[tuple[ImageLabeling, str]]):
    """The images and datasets of these asks, and the labelings grouped by (dataset id, node id)."""
    images = Image.objects.in_bulk({labeling.image_id for labeling, _ in asks})
    datasets = Dataset.objects.in_bulk({labeling.dataset_id for labeling, _ in asks})
    groups: dict[tuple[int, str], list[ImageLabeling]] = {}
    for labeling, node_id in asks:
        groups.setdefault((labeling.dataset_id, node_id), []).append(labeling)
    return images, datasets, groups


def _open_vote_questions(
    graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int
) -> None:
    """The `vote` engine: one margin-rule question per (labeling, node), served as a `hierarchy_question` task
    whose payload is the question's subject (the node, its hierarchy and DAG, the labeling)."""
    if not asks:
        return
    images, datasets, groups = _asks_grouped(asks)
    decided_already: list[tuple[ImageLabeling, str, Question]] = []
    for (dataset_id, node_id), labelings in groups.items():
        node = graph.nodes[node_id]
        # A labeling rewound past this node (voided votes) asks it again: its question stands, decided or open.
        existing = {
            q.round: q
            for q in Question.objects.filter(
                dataset_id=dataset_id,
                kind=kind_for(node.leaf),
                concept_id=node.concept_id,
                box__isnull=True,
                round__in=[labeling.pk for labeling in labelings],
            )
        }
        decided_already += [
            (labeling, node_id, existing[labeling.pk])
            for labeling in labelings
            if labeling.pk in existing and existing[labeling.pk].state in ANSWERED
        ]
        targets = []
        for labeling in labelings:
            if labeling.pk in existing:
                continue
            subject = _subject(graph, labeling, node_id)
            targets.append(
                Target(image=images[labeling.image_id], subject=subject, round=labeling.pk, payload=subject)
            )
        if not targets:
            continue
        count_questions_create(
            dataset=datasets[dataset_id],
            kind=kind_for(node.leaf),
            concept=node.concept,
            targets=targets,
            text=node.question,
            priority=priority,
            rule=vote_rule_for(node.leaf),
            task_kind=TASK_KIND,
        )
    for labeling, node_id, question in decided_already:
        _answer_from(question, labeling.pk, node_id, graph.nodes[node_id].leaf)


def vote_policy_for(leaf: bool) -> MarginPolicy:
    return LEAF if leaf else HIGH_LEVEL


def vote_rule_for(leaf: bool) -> dict:
    return rule_of(vote_policy_for(leaf))


def kind_for(leaf: bool) -> str:
    """High-level questions are `hierarchy` questions (the stopping rule favours "yes"); a leaf question is the
    plain "does this image show CONCEPT?" of image verification, decided symmetrically: a false "yes" there is a
    wrong label, not just a few more questions."""
    return QuestionKind.IMAGE_VERIFY if leaf else QuestionKind.HIERARCHY


def _open_consensus_questions(
    graph: HierarchyGraph, asks: Sequence[tuple[ImageLabeling, str]], priority: int
) -> None:
    if not asks:
        return
    images, datasets, groups = _asks_grouped(asks)
    decided_already: list[tuple[ImageLabeling, str, Question]] = []
    for (dataset_id, node_id), labelings in groups.items():
        node = graph.nodes[node_id]
        kind = kind_for(node.leaf)
        # One question per (dataset, kind, concept, image): another run (verification, another hierarchy) may
        # have asked it already. Its decision serves this image too: now if it is in, else when it comes.
        existing = {
            q.image_id: q
            for q in Question.objects.filter(
                dataset_id=dataset_id,
                kind=kind,
                concept_id=node.concept_id,
                box__isnull=True,
                round=0,  # the `vote` engine's questions (round: their labeling) are each labeling's own
                image_id__in=[labeling.image_id for labeling in labelings],
            )
        }
        fresh = [labeling for labeling in labelings if labeling.image_id not in existing]
        decided_already += [
            (labeling, node_id, existing[labeling.image_id])
            for labeling in labelings
            if labeling.image_id in existing and existing[labeling.image_id].state in ANSWERED
        ]
        if fresh:
            questions_create(
                dataset=datasets[dataset_id],
                kind=kind,
                concept=node.concept,
                targets=[
                    Target(image=images[labeling.image_id], subject=_subject(graph, labeling, node_id))
                    for labeling in fresh
                ],
                priority=priority,  # worded by consensus.wording: the node's question, as gold is
            )
    for labeling, node_id, question in decided_already:
        _answer_from(question, labeling.pk, node_id, graph.nodes[node_id].leaf)


def _answer_from(
    question: Question, labeling_id: int, node_id: str, leaf: bool, only_if_pending: bool = False
) -> None:
    """Hand an answered question (accepted or rejected, by the stopping rule or by a reviewer) to Algorithm 1."""
    from .labeling import labeling_answer  # the labeling service imports this module

    labeling_answer(
        labeling_id=labeling_id,
        node_id=node_id,
        present=question.state == QuestionState.ACCEPTED,
        yes_votes=question.yes_count,
        no_votes=question.no_count,
        task=question.task,
        only_if_pending=only_if_pending,
    )


def _labelings_of(question: Question):
    """The consensus-run labelings of the question's image, each with the node the question asks there."""
    labelings = ImageLabeling.objects.filter(
        image_id=question.image_id,
        dataset_id=question.dataset_id,
        engine=QuestionEngine.CONSENSUS,
        status__in=(LabelingStatus.RUNNING, LabelingStatus.DONE),
    ).order_by("id")
    for labeling in labelings:
        graph = graph_for(labeling.hierarchy_id, labeling.state.get("dag"))
        node = next(
            (
                n
                for n in graph.nodes.values()
                if n.concept_id == question.concept_id and kind_for(n.leaf) == question.kind
            ),
            None,
        )
        if node is not None:
            yield labeling, node


def _used(labeling: ImageLabeling, node_id: str) -> bool:
    return any(item["node"] == node_id for item in labeling.state.get("answers", []))


def question_decided(event: consensus_events.QuestionDecided) -> None:
    """A consensus question about an image was decided: hand the answer to every consensus-run labeling of that
    image that is waiting for it (the pending node's concept is the question's), and rewind every labeling that
    used an earlier, different verdict of it (re-decided after voided votes: multilabel.labeling.labeling_rewind)."""
    question = event.question
    if question.image_id is None or question.box_id is not None or question.state not in ANSWERED:
        return  # a question sent to review is answered when the reviewer decides it (a new event)
    from .labeling import labeling_rewind

    if question.rule:
        _vote_question_decided(event)
        return
    # The labelings are read while the decision's writes are held (another table); Algorithm 1's next step
    # reads the image's questions, this one included, so they are sent before it.
    for labeling, node in _labelings_of(question):
        if labeling.status == LabelingStatus.RUNNING and labeling.pending_node == node.node_id:
            event.writes_send()
            # Read before the labeling's lock: a concurrent answer may have moved it on (seen under a crowd on
            # PostgreSQL as a 500 on the deciding vote's submit); the verdict then waits to be reused.
            _answer_from(question, labeling.pk, node.node_id, node.leaf, only_if_pending=True)
        elif _used(labeling, node.node_id):
            event.writes_send()
            labeling_rewind(
                labeling_id=labeling.pk,
                node_id=node.node_id,
                present=question.state == QuestionState.ACCEPTED,
                yes_votes=question.yes_count,
                no_votes=question.no_count,
                task=question.task,
            )


def question_reopened(event: consensus_events.QuestionReopened) -> None:
    """A decided question is collecting votes again: every labeling that used its verdict is rewound to wait for
    its next decision."""
    question = event.question
    if question.image_id is None or question.box_id is not None:
        return
    from .labeling import labeling_rewind

    if question.rule:
        own = _own_labeling(question)
        if own is not None and _used(own[0], own[1]):
            labeling_rewind(labeling_id=own[0].pk, node_id=own[1], present=None)
        return
    for labeling, node in _labelings_of(question):
        if _used(labeling, node.node_id):
            labeling_rewind(labeling_id=labeling.pk, node_id=node.node_id, present=None)


def _own_labeling(question: Question) -> tuple[ImageLabeling, str] | None:
    """The `vote` engine's question answers the one labeling that asked it (named in its subject)."""
    subject = question.subject or {}
    if "labeling" not in subject or "node" not in subject:
        return None
    labeling = ImageLabeling.objects.filter(pk=subject["labeling"], engine=QuestionEngine.VOTE).first()
    return None if labeling is None else (labeling, subject["node"])


def _vote_question_decided(event: consensus_events.QuestionDecided) -> None:
    from .labeling import labeling_answer, labeling_rewind

    question = event.question
    own = _own_labeling(question)
    if own is None:
        return
    labeling, node_id = own
    present = question.state == QuestionState.ACCEPTED
    if labeling.status == LabelingStatus.RUNNING and labeling.pending_node == node_id:
        event.writes_send()  # the next question of the labeling is asked from what is written
        labeling_answer(
            labeling_id=labeling.pk,
            node_id=node_id,
            present=present,
            yes_votes=question.yes_count,
            no_votes=question.no_count,
            task=question.task,
        )
    elif _used(labeling, node_id):
        # Re-decided after voided votes: the labeling takes the new verdict from this node on.
        event.writes_send()
        labeling_rewind(
            labeling_id=labeling.pk,
            node_id=node_id,
            present=present,
            yes_votes=question.yes_count,
            no_votes=question.no_count,
            task=question.task,
        )


def subscribe() -> None:
    consensus_events.subscribe(QuestionKind.HIERARCHY, question_decided)
    consensus_events.subscribe(QuestionKind.IMAGE_VERIFY, question_decided)
    consensus_events.subscribe_reopened(QuestionKind.HIERARCHY, question_reopened)
    consensus_events.subscribe_reopened(QuestionKind.IMAGE_VERIFY, question_reopened)
