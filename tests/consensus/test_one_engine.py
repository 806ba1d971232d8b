"""One decision engine (issue 14, item 2): every yes/no in the platform is a consensus question decided by
`consensus.engine` with a policy of `consensus.stopping`. Static checks that nothing else decides or counts
votes (with a test of the checker), and runtime checks that each of the three count-rule paths (the plain vote,
the fixed box questions, multi-label's `vote` engine) creates consensus questions carrying their rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from annotation import kinds, questions
from annotation.models import Box, FinalLabel, Task, TaskState
from boxes import services as boxes
from config.layers import APP_LAYERS
from consensus import binary_vote, question_kind
from consensus.models import Estimator, Question, QuestionDecision, QuestionKind, QuestionState
from consensus.stopping import FirstToPolicy, MajorityPolicy, policy_of, rule_of
from multilabel.asking import HIGH_LEVEL, TASK_KIND
from multilabel.labeling import labeling_start
from tests import factories
from tests.annotation.boxhelpers import answer, box_rule_use, image, vote, workers
from tests.hierarchy.conftest import tiny_hierarchy  # noqa: F401  (a fixture, used by name)

ROOT = Path(__file__).resolve().parent.parent.parent
# The functions that turn vote counts into decisions.
DECIDERS = {"decide", "decide_many", "first_decisions", "outcome_of", "settle_at_cap"}
# Where they may be called: the engine, and the pure modules that define and simulate the rules.
ENGINE = {
    "consensus/engine.py",  # the one engine
    "consensus/count_questions.py",  # adoption turns an old task's answers into votes of the engine
    "consensus/stopping.py",  # the policies
    "consensus/reliability.py",  # the weighted estimator's vectorised stream (pure)
    "consensus/simulation.py",  # simulated crowds for the cost benches and `simulate`
}


def app_modules() -> list[Path]:
    apps = [app for layer in APP_LAYERS for app in layer]
    return sorted(
        path
        for app in apps
        for path in (ROOT / app).rglob("*.py")
        if "migrations" not in path.parts and path.exists()
    )


def _imported_deciders(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "stopping":
            found += [(node.lineno, alias.name) for alias in node.names if alias.name in DECIDERS]
        elif isinstance(node, ast.Attribute) and node.attr in DECIDERS:
            if isinstance(node.value, ast.Name) and node.value.id == "stopping":
                found.append((node.lineno, node.attr))
    return found


def _answer_counting(tree: ast.AST) -> list[tuple[int, str]]:
    """Code that reads submitted answers back out of assignments: what a per-kind vote counter does."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and node.value == "answer__answer") or (
            isinstance(node, ast.keyword) and (node.arg or "").startswith("answer__answer")
        ):
            found.append((getattr(node, "lineno", 0) or node.value.lineno, "filters on answer__answer"))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("values_list", "values", "aggregate")
            and "Assignment" in ast.unparse(node.func.value)
            and any(isinstance(a, ast.Constant) and a.value == "answer" for a in node.args)
        ):
            found.append((node.lineno, "reads Assignment answers"))
    return found


def decisions_outside_the_engine(paths: list[Path], root: Path) -> list[str]:
    problems = []
    for path in paths:
        name = path.relative_to(root).as_posix()
        if name in ENGINE:
            continue
        tree = ast.parse(path.read_text(), filename=name)
        problems += [f"{name}:{line} uses {what}" for line, what in _imported_deciders(tree)]
        problems += [f"{name}:{line} {what}" for line, what in _answer_counting(tree)]
    return problems


def test_no_module_outside_the_engine_decides_or_counts_yes_no_votes():
    modules = app_modules()
    assert len(modules) > 100, "the app modules were not found"
    assert decisions_outside_the_engine(modules, ROOT) == []


def test_the_check_catches_a_kind_that_counts_and_decides_its_own_votes(tmp_path):
    old = tmp_path / "annotation" / "old_vote.py"
    old.parent.mkdir()
    old.write_text(
        "from consensus.stopping import MajorityPolicy, decide\n"
        "def on_submit(assignment):\n"
        "    answers = Assignment.objects.filter(task=assignment.task).values_list('answer', flat=True)\n"
        "    yes = Assignment.objects.filter(answer__answer=True).count()\n"
        "    return decide(None, yes, len(answers) - yes, MajorityPolicy(3))\n"
    )
    problems = decisions_outside_the_engine([old], tmp_path)
    assert problems == [
        "annotation/old_vote.py:1 uses decide",
        "annotation/old_vote.py:3 reads Assignment answers",
        "annotation/old_vote.py:4 filters on answer__answer",
    ]


def test_every_yes_no_task_kind_submits_through_the_engine():
    yes_no = [
        kinds.get(name) for name in kinds.names() if kinds.get(name).clean_answer is kinds.yes_no_answer
    ]
    assert {k.name for k in yes_no} >= {"question", "binary_vote", "box_quality", "box_coverage", TASK_KIND}
    for kind in yes_no:
        handler = getattr(kind.on_submit, "engine", kind.on_submit)
        assert handler is question_kind.on_submit, f"{kind.name} decides outside the engine"


@pytest.mark.django_db
def test_a_plain_vote_is_a_consensus_question_with_a_fixed_majority_decided_by_the_engine(dataset):
    concept = factories.ConceptFactory(name="dog")
    (task,) = binary_vote.vote_tasks_create(dataset=dataset, concept=concept, images=[image(dataset)])
    question = Question.objects.get(task=task)
    assert (question.kind, task.kind) == (QuestionKind.BINARY_VOTE, "binary_vote")
    assert policy_of(question.rule) == MajorityPolicy(3) and task.answers_wanted == 3
    first, *others = workers(3)
    assert answer(first, "binary_vote", {"answer": True}).result == {"yes": 1, "no": 0}, "the running tally"
    vote(others, "binary_vote", True)
    question.refresh_from_db()
    row = QuestionDecision.objects.get(question=question)
    assert (question.state, row.decision, row.estimator) == (
        QuestionState.ACCEPTED,
        "accept",
        Estimator.COUNT,
    )
    label = FinalLabel.objects.get(image_id=task.image_id, concept=concept)
    assert (label.present, label.source, label.yes_count) == (True, "binary_vote", 2)


@pytest.mark.django_db
def test_a_plain_vote_tied_at_its_cap_closes_unanswered_and_reaches_no_reviewer(dataset):
    from review.models import ReviewItem

    concept = factories.ConceptFactory(name="cat")
    (task,) = binary_vote.vote_tasks_create(
        dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=2
    )
    a, b = workers(2)
    answer(a, "binary_vote", {"answer": True})
    done = answer(b, "binary_vote", {"answer": False})
    assert done.state == TaskState.DONE
    assert done.result == {"answer": None, "yes": 1, "no": 1, "rule": "majority of 2"}
    assert Question.objects.get(task=task).state == QuestionState.UNANSWERED
    assert not ReviewItem.objects.exists()
    assert not FinalLabel.objects.filter(
        image_id=task.image_id, concept=concept, present__isnull=False
    ).exists()


@pytest.fixture
def fixed_box_backend(settings):
    """The box pipeline asks its questions under the fixed rule (CROWDLABEL_BOX_QUESTION_BACKEND=fixed)."""
    box_rule_use(settings, "fixed")


@pytest.mark.django_db
def test_the_fixed_box_backend_asks_consensus_questions_with_first_to_rules(dataset, fixed_box_backend):
    concept = factories.ConceptFactory(name="dog")
    job, _ = boxes.box_job_start(image=image(dataset), concept=concept)
    drawer, *others = workers(6)
    drawn = answer(drawer, boxes.DRAW_KIND, {"box": [10, 10, 110, 90]})
    box = Box.objects.get(pk=drawn.result["box_id"])
    quality = Question.objects.get(box=box)
    assert (quality.kind, quality.task.kind) == (QuestionKind.BOX_QUALITY, questions.QUALITY)
    assert policy_of(quality.rule) == FirstToPolicy(2, 2) and quality.task.answers_wanted == 3
    assert quality.task.exclusions.filter(worker=drawer).exists(), "the drawer never judges their own box"
    vote(others, questions.QUALITY, True)
    box.refresh_from_db()
    assert box.state == "accepted"
    assert QuestionDecision.objects.get(question=quality).estimator == Estimator.COUNT
    coverage = Question.objects.get(kind=QuestionKind.BOX_COVERAGE)
    assert (policy_of(coverage.rule), coverage.round) == (FirstToPolicy(3, 1), 1)


@pytest.mark.django_db
def test_the_multilabel_vote_engine_asks_consensus_questions_with_margin_rules(dataset, tiny_hierarchy):  # noqa: F811
    images = [image(dataset), image(dataset)]
    labeling_start(dataset=dataset, hierarchy=tiny_hierarchy, images=images, engine="vote")
    asked = list(Question.objects.order_by("id"))
    assert len(asked) == 2
    for question in asked:
        assert question.kind == QuestionKind.HIERARCHY and question.task.kind == TASK_KIND
        assert question.rule == rule_of(HIGH_LEVEL)
        assert question.round == question.subject["labeling"], "each labeling asks its own question"
    assert Task.objects.filter(kind=TASK_KIND).count() == 2


@pytest.mark.django_db
def test_an_open_vote_task_from_before_is_adopted_with_its_earlier_answers_as_votes():
    from django.utils import timezone

    from annotation.models import Assignment
    from consensus.models import Vote

    task = factories.TaskFactory(answers_wanted=3)  # queued bare, as before plain votes were questions
    earlier = factories.user_with_roles("earlier", ("workers",)).worker
    first = Assignment.objects.create(
        task=task, worker=earlier, state="submitted", expires_at=timezone.now(), answer={"answer": False}
    )
    Task.objects.filter(pk=task.pk).update(answers_count=1)
    (voter,) = workers(1)
    answer(voter, "binary_vote", {"answer": False})
    question = Question.objects.get(task=task)
    assert (question.kind, policy_of(question.rule)) == (QuestionKind.BINARY_VOTE, MajorityPolicy(3))
    votes = list(Vote.objects.filter(question=question).order_by("id").values_list("assignment_id", "answer"))
    assert votes[0] == (first.pk, False) and len(votes) == 2
    assert question.state == QuestionState.REJECTED


@pytest.mark.django_db
def test_a_starved_plain_vote_closes_unanswered_rather_than_reaching_a_reviewer(dataset):
    from consensus.starved import question_settle_starved
    from consensus.stopping import Decision
    from review.models import ReviewItem

    (task,) = binary_vote.vote_tasks_create(
        dataset=dataset, concept=factories.ConceptFactory(), images=[image(dataset)], answers_wanted=3
    )
    (voter,) = workers(1)
    answer(voter, "binary_vote", {"answer": True})
    question = Question.objects.get(task=task)
    assert question_settle_starved(question) is Decision.REVIEW
    question.refresh_from_db()
    assert question.state == QuestionState.UNANSWERED and not ReviewItem.objects.exists()
    assert Task.objects.get(pk=task.pk).result == {"answer": None, "yes": 1, "no": 0, "rule": "majority of 3"}


@pytest.mark.django_db
def test_voiding_the_vote_that_decided_a_plain_vote_reopens_it_and_withdraws_its_label(dataset):
    from consensus.models import Vote
    from consensus.voiding import votes_void

    concept = factories.ConceptFactory()
    (task,) = binary_vote.vote_tasks_create(
        dataset=dataset, concept=concept, images=[image(dataset)], answers_wanted=1
    )
    (voter,) = workers(1)
    answer(voter, "binary_vote", {"answer": True})
    assert FinalLabel.objects.get(image_id=task.image_id, concept=concept).present is True
    report = votes_void(votes=Vote.objects.values_list("pk", flat=True), reason="worker blocked")
    question = Question.objects.get(task=task)
    assert report.reopened == [question.pk] and question.state == QuestionState.OPEN
    assert Task.objects.get(pk=task.pk).state == TaskState.OPEN
    assert not FinalLabel.objects.filter(
        image_id=task.image_id, concept=concept, present__isnull=False
    ).exists()
