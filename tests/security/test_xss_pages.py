"""A 50-payload XSS corpus in every organizer-controlled string (concept names and glosses, question text, box
instructions, dataset names) renders as inert text on the worker, reviewer and admin pages in real Chromium:
no dialog opens, no element a payload describes is created, and the policy never has to block anything."""

from __future__ import annotations

import pytest

from annotation.models import Box, BoxState, Task
from boxes import services as boxes
from consensus.binary_vote import vote_tasks_create
from review.models import ReviewItem, ReviewKind
from tests import factories
from tests.conftest import png_bytes
from tests.security.xss_corpus import INJECTED_ELEMENTS_JS, PAYLOADS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pass-for-tests-123"


@pytest.fixture
def watched(page):
    """The page, with every dialog (alert, confirm, prompt) recorded and dismissed."""
    page.dialogs = []

    def on_dialog(dialog):
        page.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return page


@pytest.fixture
def hostile_concepts(db):
    return [
        factories.ConceptFactory(wnid=f"n{90000000 + n:08d}", name=payload, gloss=payload)
        for n, payload in enumerate(PAYLOADS)
    ]


@pytest.fixture
def image(db):
    dataset = factories.DatasetFactory()
    return factories.ImageFactory(dataset=dataset, width=200, height=150, file__data=png_bytes((200, 150)))


def sign_in(page, base_url: str, username: str, then: str) -> None:
    page.goto(f"{base_url}/accounts/login/?next={then}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}{then}")


# The worker page's own markup that the check would otherwise count: the form that closes the shortcut list.
WORKER_OWN = ["main dialog#shortcuts > form[method=dialog]"]
REVIEW_OWN = ["main form#bulk-filter"]  # the page's own "Decide many items at once" filters


def assert_inert(page, root: str, own: list[str] | tuple[str, ...] = ()) -> None:
    assert page.evaluate(INJECTED_ELEMENTS_JS, [root, list(own)]) == []
    assert page.dialogs == []
    refused = [e for e in page.console_errors if "Content Security Policy" in e]
    assert refused == [], "escaping let markup through; only the policy stopped it"


def worker_pages(page, count: int, key: str) -> list[str]:
    """Answer `count` tasks with `key`, checking each page; returns each page's #task-body text."""
    texts = []
    for n in range(count):
        page.wait_for_function(
            "n => document.getElementById('answered').textContent === String(n)"
            " && document.querySelector('#task-body[data-answerable] .answers') !== null",
            arg=n,
        )
        assert_inert(page, "main", WORKER_OWN)
        texts.append(page.inner_text("#task-body"))
        page.keyboard.press(key)
    page.wait_for_function("n => document.getElementById('answered').textContent === String(n)", arg=count)
    return texts


def test_corpus_in_concept_names_glosses_and_question_text_is_inert_on_the_worker_vote_page(
    live_server, watched, hostile_concepts, image
):
    for concept in hostile_concepts:
        vote_tasks_create(dataset=image.dataset, concept=concept, answers_wanted=1)
    for task in Task.objects.all():  # question text as a hierarchy node's organizer-written wording
        task.payload = {**task.payload, "question": f"{task.concept.name}?"}
        task.save(update_fields=["payload"])
    factories.user_with_roles("ann", ("workers",))
    sign_in(watched, live_server.url, "ann", "/worker/?kinds=binary_vote")

    texts = worker_pages(watched, len(PAYLOADS), "y")

    shown = {text.splitlines()[0].removesuffix("?") for text in texts}
    assert shown == set(PAYLOADS), "every payload was shown, as text"


def test_corpus_in_concept_names_is_inert_on_the_worker_draw_page_and_its_buttons(
    live_server, watched, hostile_concepts, image
):
    for concept in hostile_concepts:
        boxes.box_jobs_start(dataset=image.dataset, concept=concept, images=[image])
    factories.user_with_roles("ann", ("workers",))
    sign_in(watched, live_server.url, "ann", "/worker/?kinds=box_draw")

    labels = []
    for n in range(len(PAYLOADS)):
        watched.wait_for_function(
            "n => document.getElementById('answered').textContent === String(n)"
            " && document.querySelector('#task-body[data-answerable] button.no') !== null",
            arg=n,
        )
        assert_inert(watched, "main", WORKER_OWN)
        labels.append(watched.locator("#task-body button.no").evaluate("b => b.firstChild.textContent"))
        watched.keyboard.press("n")  # nothing left to box: the next job's page

    assert {label.removeprefix("No ").removesuffix(" left without a box ") for label in labels} == set(
        PAYLOADS
    )


def test_corpus_in_concept_names_is_inert_on_the_review_page(live_server, watched, hostile_concepts, image):
    items = []
    for n, concept in enumerate(hostile_concepts):
        other = hostile_concepts[(n + 1) % len(hostile_concepts)]
        a = Box.objects.create(
            image=image, concept=concept, x1=10, y1=10, x2=100, y2=100, state=BoxState.ACCEPTED
        )
        b = Box.objects.create(
            image=image, concept=other, x1=12, y1=10, x2=100, y2=98, state=BoxState.ACCEPTED
        )
        items.append(
            ReviewItem.objects.create(
                kind=ReviewKind.CROSS_CLASS,
                dataset=image.dataset,
                image=image,
                box_a=a,
                box_b=b,
                iou=0.9,
                reason=concept.name,
            )
        )
    factories.user_with_roles("rita", ("reviewers",))
    sign_in(watched, live_server.url, "rita", "/review/")

    labels = set()
    for item in items:
        watched.wait_for_selector(f"#item[data-item='{item.pk}']:not([hidden])")
        assert_inert(watched, "main", REVIEW_OWN)
        labels.add(watched.inner_text(".box.a .box-label").removeprefix("A · "))
        watched.keyboard.press("s")  # skip: the next item

    assert labels == set(PAYLOADS)


def test_corpus_in_dataset_and_concept_names_is_inert_in_the_admin(live_server, watched, hostile_concepts):
    for payload in PAYLOADS:
        factories.DatasetFactory(name=payload)
    admin = factories.user_with_roles("boss", ())
    admin.is_staff = admin.is_superuser = True
    admin.save()
    sign_in(watched, live_server.url, "boss", "/admin/")
    for path in ("/admin/annotation/dataset/", "/admin/hierarchy/concept/"):
        watched.goto(f"{live_server.url}{path}")
        rows = watched.locator("#result_list tbody tr")
        assert rows.count() == len(PAYLOADS)
        assert_inert(watched, "#result_list tbody")
