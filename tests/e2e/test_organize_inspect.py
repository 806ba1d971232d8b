"""Inspecting a dataset in real headless Chromium: from the image grid to an image's page (its boxes drawn, the
votes and decisions of its question), from the People page to a worker's history, and on the Classes page the
hierarchy's tree and a confusable pair added and removed; on the dataset page a reviewer's decision undone, and
on the Images page near-duplicate flags confirmed and dismissed."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from playwright.sync_api import expect

from annotation.ingest import IngestItem, images_ingest
from annotation.models import Assignment, AssignmentState, Box, BoxState
from consensus.models import Question, QuestionDecision, QuestionRole, QuestionState, Vote
from hierarchy.fixture import parse_fixture
from hierarchy.models import Concept
from hierarchy.services import hierarchy_load
from review.models import ConfusablePair
from tests import factories
from tests.browser_fixtures import sign_in
from tests.conftest import png_bytes

pytestmark = pytest.mark.browser


def test_an_organizer_inspects_an_image_a_worker_and_the_classes(page, live_server):
    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="inspect")
    (image,) = images_ingest(
        dataset=dataset, items=[IngestItem("dog.png", png_bytes(size=(200, 100), seed=3))]
    ).stored
    hierarchy_load(parse_fixture(json.loads(open("fixtures/hierarchies/voc20.json").read())))
    dog, cat = Concept.objects.get(wnid="n02084071"), Concept.objects.get(wnid="n02121808")
    dataset.concepts.set([dog, cat])
    wendy = factories.user_with_roles("wendy", ("workers",)).worker
    Box.objects.create(
        image=image, concept=dog, x1=10, y1=10, x2=90, y2=80, state=BoxState.ACCEPTED, drawn_by=wendy
    )
    question = Question.objects.create(
        kind="image_verify",
        dataset=dataset,
        concept=dog,
        image=image,
        role=QuestionRole.PRODUCTION,
        state=QuestionState.ACCEPTED,
        yes_count=1,
        no_count=0,
        p=0.97,
    )
    task = factories.TaskFactory(dataset=dataset, image=image, concept=dog)
    now = timezone.now()
    assignment = Assignment.objects.create(
        task=task,
        worker=wendy,
        state=AssignmentState.SUBMITTED,
        leased_at=now - timedelta(seconds=6),
        expires_at=now + timedelta(minutes=5),
        submitted_at=now,
        answer={"answer": True},
    )
    Vote.objects.create(question=question, worker=wendy, answer=True, assignment=assignment)
    QuestionDecision.objects.create(
        question=question, decision="accept", p=0.97, yes_count=1, no_count=0, estimator="weighted"
    )
    # The rows above were written around the queue, so its counters (People reads the worker tally) are
    # brought up to date the way a repair would.
    call_command("counters_recount", "--dataset", str(dataset.pk), stdout=io.StringIO())

    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/images/")
    page.locator(f"#grid figure[data-image='{image.pk}'] a").click()
    expect(page.locator("#image-status")).to_contain_text("dog.png · 200×100")
    expect(page.locator("#image-stage svg rect")).to_have_count(1)
    expect(page.locator("#boxes tbody tr")).to_contain_text("wendy")
    row = page.locator(f"#questions tbody tr[data-question='{question.pk}']")
    expect(row.locator(".votes")).to_have_text("wendy: yes")
    expect(row).to_contain_text("accept at 1/0")

    page.get_by_role("link", name="People", exact=True).click()
    page.get_by_role("link", name="wendy").click()
    expect(page.locator("#worker-name")).to_have_text("wendy")
    expect(page.locator("#stages tbody")).to_contain_text("binary_vote")
    expect(page.locator("#recent tbody tr")).to_have_count(1)

    page.get_by_role("link", name="Classes", exact=True).click()
    expect(page.locator("#tree-status")).to_contain_text("20 classes")
    expect(page.locator("#tree li[data-node='n02084071']").first).to_contain_text("dog (n02084071) ✓")
    form = page.locator("#pair-form")
    form.get_by_label("Class").select_option("n02121808")
    form.get_by_label("confused with").select_option("n02084071")
    form.get_by_label("Note").fill("small furry pets")
    form.get_by_role("button", name="Add pair").click()
    expect(page.locator("#pairs tbody tr")).to_contain_text("small furry pets")
    assert ConfusablePair.objects.count() == 1
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#pairs tbody tr").get_by_role("button", name="Remove").click()
    expect(page.locator("#pairs tbody tr")).to_have_count(0)
    assert not ConfusablePair.objects.exists()
    assert page.console_errors == []


def test_an_organizer_undoes_a_review_decision_from_the_dataset_page(page, live_server):
    from review.models import ReviewItem
    from tests.organize.test_review_api import decided_pair

    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="reviewed")
    decision = decided_pair(dataset, factories.user_with_roles("rita", ("reviewers",)))
    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/")
    row = page.locator(f"#decisions tbody tr[data-decision='{decision.pk}']")
    expect(row).to_contain_text("duplicate_keep_a")
    page.once("dialog", lambda dialog: dialog.accept("both are dogs"))
    row.get_by_role("button", name="Undo…").click()
    expect(row).to_contain_text("undone")
    expect(page.locator("#decisions tbody tr").first).to_contain_text("undo")
    assert ReviewItem.objects.get(pk=decision.item_id).state == "open"
    assert page.console_errors == []


def test_an_organizer_confirms_and_dismisses_near_duplicate_flags(page, live_server, tmp_path):
    from annotation.models import Image

    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer], name="dups")
    report = images_ingest(
        dataset=dataset,
        items=[IngestItem(f"cat{k}.png", png_bytes(size=(120, 90), seed=10 + k)) for k in range(3)],
    )
    original, first, second = report.stored
    Image.objects.filter(pk__in=[first.pk, second.pk]).update(near_duplicate_of=original)
    sign_in(page, live_server.url, "olga", f"/organize/datasets/{dataset.pk}/images/")
    expect(page.locator("#duplicates-status")).to_have_text("2 flags to confirm")
    page.locator(f".duplicate[data-image='{first.pk}']").get_by_role(
        "button", name="Confirm: a near-duplicate"
    ).click()
    expect(page.locator("#duplicates-status")).to_have_text("1 flag to confirm")
    page.locator(f".duplicate[data-image='{second.pk}']").get_by_role(
        "button", name="Dismiss: distinct images"
    ).click()
    expect(page.locator("#duplicates-status")).to_have_text("No flag to confirm.")
    assert Image.objects.get(pk=first.pk).near_duplicate_of_id == original.pk
    assert Image.objects.get(pk=second.pk).near_duplicate_of_id is None

    # An upload that raises a flag shows it in the list without a reload (one pixel off the original).
    import io

    from PIL import Image as PILImage

    picture = PILImage.open(io.BytesIO(png_bytes(size=(120, 90), seed=10)))
    picture.putpixel((0, 0), (255, 255, 255))
    near = tmp_path / "cat-again.png"
    picture.save(near)
    page.locator("#file-input").set_input_files(str(near))
    expect(page.locator("#upload-summary")).to_have_text("1 stored, 0 refused, 0 waiting")
    expect(page.locator("#duplicates-status")).to_have_text("1 flag to confirm")
    expect(page.locator(".duplicate figcaption").first).to_have_text("cat-again.png")
    assert page.console_errors == []
