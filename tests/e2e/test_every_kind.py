"""Every task kind's page in real Chromium (issue 17): on a desktop and on a 390x844 touch screen, each kind -
yes/no vote, image verification, hierarchy question (by either engine), box to draw, box to check, coverage
question - shows its question (in the status line too) and image, fits the screen without cutting a button,
speaks of tapping on a phone, and has no axe-core WCAG 2.1 AA violation, also with the undo bar on screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import queue
from annotation.imagerefs import image_ref
from boxes import services as boxes
from consensus import verification
from consensus.binary_vote import vote_tasks_create
from consensus.models import Question, QuestionKind
from crowd import demo_tasks
from crowd.management.commands.load_demo import DEMO_CONCEPTS
from hierarchy.fixture import parse_fixture
from hierarchy.services import concepts_upsert, hierarchy_load
from multilabel.labeling import labeling_start
from tests import factories
from tests.e2e.test_accessibility import violations
from tests.e2e.test_worker_forgiving import dataset_with_images
from tests.e2e.test_worker_page import PASSWORD, wait_for_image_loaded

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTIONS = {
    "binary_vote": "Does this image show a car?",
    "image_verify": "car",
    "hierarchy_question": "Is there ANY ",  # animal or wheeled vehicle: the order picks one
    "hierarchy_consensus": "Is there ANY ",  # the same question asked by the default (consensus) engine
    "box_draw": "Draw a box around one car",
    "box_quality": "Is this box tight around one whole visible car",
    "box_coverage": "Is every car in this image inside a box?",
}


def queue_one(kind: str) -> str:
    """Tasks of this one kind on a fresh dataset; the `kinds` the worker page is opened with."""
    dataset, images = dataset_with_images(2, size=(480, 360))
    concepts = concepts_upsert(DEMO_CONCEPTS)
    car = concepts["n02958343"]
    if kind == "binary_vote":
        vote_tasks_create(dataset=dataset, concept=car, answers_wanted=3)
        return "binary_vote"
    if kind == "image_verify":
        verification.verification_queue(dataset=dataset, concept=car)
        return "question"
    if kind == "hierarchy_question":
        demo_tasks.hierarchy_start(dataset, DEMO_CONCEPTS, images[:1])
        return "hierarchy_question"
    if kind == "hierarchy_consensus":
        hierarchy = hierarchy_load(parse_fixture(demo_tasks.demo_hierarchy(DEMO_CONCEPTS))).hierarchy
        labeling_start(dataset=dataset, hierarchy=hierarchy, images=images[:1])
        return "question"
    if kind == "box_draw":
        boxes.box_job_start(image=images[0], concept=car)
        return "box_draw"
    if kind == "box_quality":
        boxes.box_job_start(image=images[0], concept=car)
        drawer = factories.user_with_roles("drawer", ("workers",)).worker
        lease = queue.task_lease_next(worker=drawer)
        box = [100.0, 80.0, 380.0, 300.0]
        queue.assignment_submit(
            assignment=lease, answer={"box": box, "image": image_ref(images[0].pk)}, idempotency_key="d"
        )
        assert Question.objects.filter(kind=QuestionKind.BOX_QUALITY, state="open").exists()
        return "question"
    assert kind == "box_coverage"
    demo_tasks.crowd_boxes(dataset, car, images[0])
    assert demo_tasks.coverage_waiting(dataset)
    return "question"


def sign_in_to(page, base_url: str, kinds: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next=/worker/%3Fkinds%3D{kinds}")
    page.get_by_label("Username").fill("ann")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base_url}/worker/?kinds={kinds}")


@pytest.mark.parametrize("kind", list(QUESTIONS))
@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_every_kind_fits_the_screen_and_has_no_accessibility_violations(chromium, live_server, kind, screen):
    kinds = queue_one(kind)
    factories.user_with_roles("ann", ("workers",))
    phone = screen == "phone"
    viewport = {"width": 390, "height": 844} if phone else {"width": 1100, "height": 800}
    context = chromium.new_context(viewport=viewport, is_mobile=phone, has_touch=phone)
    try:
        page = context.new_page()
        sign_in_to(page, live_server.url, kinds)
        wait_for_image_loaded(page)
        expect(page.locator("h1.question")).to_contain_text(QUESTIONS[kind])
        # The status line (the screen reader's live region) reads the question itself, never a kind's title
        # with a placeholder ("Is there ANY ... in this image?").
        question = page.locator("h1.question").text_content()
        expect(page.locator("#status")).to_have_text(question)
        assert "..." not in question
        if kind.startswith("hierarchy"):  # what counts, by either engine
            expect(page.locator("p.examples")).to_contain_text("For example: ")
        assert violations(page) == []
        width = viewport["width"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for button in page.locator("button.answer").all():
            box = button.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= width, button.text_content()
            assert button.evaluate("b => b.scrollWidth <= b.clientWidth"), f"{button.text_content()} is cut"
        if phone:
            expect(page.locator("button.answer kbd").first).to_be_hidden()
            assert "press" not in page.locator("main").inner_text().lower()
        if kind == "box_draw":
            return
        page.get_by_role("button", name="Yes").click()
        expect(page.locator("#answered")).to_have_text("1")
        expect(page.locator("#undo-bar")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert violations(page) == []
    finally:
        context.close()
