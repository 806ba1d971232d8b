"""The organizer workspace in real headless Chromium: a new, non-staff organizer signs in from the home page,
creates a dataset, uploads a folder with one bad file (its refusal shown), uploads voc20.json and picks
classes, starts multi-label questioning with
confirmation (the audit trail shows it), starts boxing on the images verified to show the class (refused, with
the reason, while there is none), watches the progress bars move, and invites a worker who accepts."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import AuditEntry, BoxJob, Dataset, FinalLabel, Image
from config.roles import WORKERS, has_role
from hierarchy.models import Hierarchy
from multilabel.models import ImageLabeling, LabelingStatus
from tests import factories
from tests.browser_fixtures import sign_in
from tests.conftest import png_bytes

pytestmark = pytest.mark.browser


def test_an_organizer_creates_uploads_starts_watches_and_invites(page, chromium, live_server, tmp_path):
    factories.user_with_roles("olga", ("organizers",))
    base = live_server.url
    sign_in(page, base, "olga")
    page.goto(f"{base}/")
    page.get_by_role("link", name="Organize datasets").click()
    expect(page.locator("#no-datasets")).to_be_visible()
    page.wait_for_load_state("networkidle")  # the page's module listens before the form is submitted

    page.get_by_label("Name").fill("street-scenes")
    page.get_by_label("Description").fill("photos of streets")
    page.get_by_role("button", name="Create dataset").click()
    expect(page.locator("h1")).to_have_text("street-scenes")
    # A new dataset's page says what to do first: nothing is ticked off yet.
    expect(page.locator("#checklist")).to_be_visible()
    expect(page.locator("#checklist-steps li")).to_have_count(5)
    expect(page.locator("#checklist-steps li.done")).to_have_count(0)
    expect(page.locator("#checklist-steps li[data-step='images'] a")).to_have_text("Upload images")
    dataset = Dataset.objects.get(name="street-scenes")
    assert list(dataset.organizers.values_list("username", flat=True)) == ["olga"]

    # A folder of three files, one of which is not an image.
    folder = tmp_path / "street"
    folder.mkdir()
    for n in range(2):
        (folder / f"good-{n}.png").write_bytes(png_bytes(size=(80, 60), seed=n))
    (folder / "notes.png").write_bytes(b"this is not an image")
    page.get_by_role("link", name="Images", exact=True).click()
    expect(page.locator("#grid-status")).to_have_text("0 images")  # the page's module listens by now
    page.locator("#file-input").set_input_files([str(p) for p in sorted(folder.iterdir())])
    expect(page.locator("#upload-summary")).to_have_text("2 stored, 1 refused, 0 waiting")
    refused = page.locator("#uploads li.refused")
    expect(refused).to_have_count(1)
    expect(refused).to_contain_text("notes.png")
    expect(refused).to_contain_text("refused:")
    expect(page.locator("#grid figure")).to_have_count(2)
    expect(page.locator("#grid-status")).to_have_text("2 images")
    assert Image.objects.filter(dataset=dataset).count() == 2

    # Classes: a broken file is refused with its problems listed; voc20.json loads; three classes picked.
    page.get_by_role("link", name="Classes", exact=True).click()
    page.wait_for_load_state("networkidle")  # the module listens for the file input before a file is chosen
    broken = tmp_path / "broken.json"
    broken.write_text(
        '{"format": "crowdlabel-hierarchy/1", "name": "x", "version": "1", "nodes": [{"id": "bad"}]}'
    )
    page.locator("#hierarchy-file").set_input_files(str(broken))
    expect(page.locator("#upload-errors li")).to_contain_text(["'bad' is neither a WordNet id"])
    page.locator("#hierarchy-file").set_input_files("fixtures/hierarchies/voc20.json")
    expect(page.locator("#upload-status")).to_contain_text("Loaded: PASCAL VOC 20")
    expect(page.locator("#upload-errors li")).to_have_count(0)
    expect(page.locator("#choices input")).to_have_count(20)
    for name in ("cat", "dog", "person"):
        page.locator("#choices label", has_text=name).first.locator("input").check()
    page.get_by_role("button", name="Save the selection").click()
    expect(page.locator("#pick-status")).to_have_text("3 classes selected")
    assert dataset.concepts.count() == 3
    hierarchy = Hierarchy.objects.get()

    # Start multi-label questioning: a confirmation first, then an audit row.
    page.get_by_role("link", name="Progress & pipelines").click()
    expect(page.locator("#checklist-steps li.done")).to_have_count(2)  # images and classes
    expect(page.locator("#start-multilabel select option")).to_have_count(1)
    page.get_by_role("button", name="Start multi-label questioning…").click()
    expect(page.locator("#confirm")).to_be_visible()
    page.locator("#confirm-ok").click()
    expect(page.locator("#audit tbody tr[data-action='multilabel.start']")).to_have_count(1)
    entry = AuditEntry.objects.get(dataset=dataset, action="multilabel.start")
    assert entry.parameters["hierarchy"] == hierarchy.pk and entry.actor.username == "olga"

    bar = page.locator("[data-stage='multilabel'] .bar")
    expect(bar).to_have_attribute("aria-valuemax", "2")
    expect(bar).to_have_attribute("aria-valuenow", "0")
    # The crowd finishes one image: the bar moves on the next poll without a reload.
    labeling = ImageLabeling.objects.filter(dataset=dataset).first()
    ImageLabeling.objects.filter(pk=labeling.pk).update(status=LabelingStatus.DONE)
    expect(bar).to_have_attribute("aria-valuenow", "1")
    expect(page.locator("#cost-summary")).to_contain_text("USD including a 20% provider fee")
    expect(page.locator("#cost-alternatives tbody tr")).to_have_count(4)
    expect(page.locator("#cost-reviewers")).to_have_text(
        "Reviewers: 0 minutes (0 spent on 0 decided items, 0 expected for 0 open ones, at 30 s an item)"
    )
    expect(page.locator("#review tbody tr[data-kind='duplicate'] td").nth(1)).to_have_text("0")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Start the overlap scan").click()
    expect(page.locator("#review-status")).to_have_text("Scan started.")
    expect(page.locator("#audit tbody tr[data-action='review.overlap_scan']")).to_have_count(1)

    # Verification of every class at once: "Select all", one confirmation naming them, a line per class.
    verify_form = page.locator("#start-verification")
    expect(verify_form.locator("input[name='concept']")).to_have_count(3)
    verify_form.get_by_label("Select all").check()
    verify_form.get_by_role("button", name="Start verification…").click()
    expect(page.locator("#confirm-text")).to_have_text("Verify the candidate images of 3 classes?")
    expect(page.locator("#confirm-params")).to_contain_text("cat, dog, person")
    page.locator("#confirm-ok").click()
    expect(page.locator("#audit tbody tr[data-action='verification.start']")).to_have_count(3)
    expect(page.locator("#start-status")).to_contain_text("dog: 2 question(s) asked")

    # Boxing starts where the class is verified present, and the confirmation says so.
    dog = dataset.concepts.get(name="dog")
    boxes_form = page.locator("#start-boxes")
    boxes_form.get_by_label("Class").select_option(dog.wnid)
    boxes_form.get_by_role("button", name="Start boxing…").click()
    expect(page.locator("#confirm-text")).to_have_text("Start boxing dog on the images verified to show it?")
    page.locator("#confirm-ok").click()
    expect(page.locator("#start-error")).to_contain_text(
        f"no image of this dataset is verified to show {dog.wnid}"
    )
    assert not BoxJob.objects.exists()
    shown = Image.objects.filter(dataset=dataset).order_by("id").first()
    FinalLabel.objects.create(dataset=dataset, image=shown, concept=dog, present=True, source="consensus")
    boxes_form.get_by_role("button", name="Start boxing…").click()
    page.locator("#confirm-ok").click()
    expect(page.locator("#start-status")).to_have_text(
        "Boxing dog: 1 new job(s), 0 image(s) already had one."
    )
    assert list(BoxJob.objects.values_list("image_id", flat=True)) == [shown.pk]

    # Invite a worker; the link works in a browser with nobody signed in.
    page.get_by_role("link", name="People", exact=True).click()
    page.get_by_role("button", name="Create invitation link").click()
    expect(page.locator("#issued-url")).to_have_value(re.compile(r"/invite/[-\w]{40,}/$"))
    url = page.locator("#issued-url").input_value()
    assert "/invite/" in url
    expect(page.locator("#invitations tbody tr")).to_have_count(1)
    # The browser logs the refused upload's 400 as a failed resource; nothing else may go wrong.
    assert [e for e in page.console_errors if "status of 400" not in e] == []  # the two refusals above

    other = chromium.new_context()
    invitee = other.new_page()
    invitee.goto(url)
    expect(invitee.locator("h1")).to_have_text("Join street-scenes")
    invitee.get_by_label("Username").fill("walt")
    invitee.get_by_label("Password").fill("a-long-passphrase-42")
    invitee.get_by_role("button", name="Create my account").click()
    expect(invitee.locator("h1")).to_have_text("Welcome, walt")
    # An annotator is not shown an API token unless they open "Answering with a program…".
    expect(invitee.locator("#api-token")).to_be_hidden()
    invitee.get_by_role("link", name="Continue").click()
    expect(invitee).to_have_url(f"{base}/worker/")
    other.close()
    from django.contrib.auth import get_user_model

    assert has_role(get_user_model().objects.get(username="walt"), WORKERS)

    # The invited worker is listed under People; the organizer blocks them with a reason.
    page.reload()
    row = page.locator("#workers tbody tr", has_text="walt")
    expect(row.locator(".standing")).to_have_text("active")
    page.once("dialog", lambda dialog: dialog.accept("spam answers"))
    row.get_by_role("button", name="Block…").click()
    expect(row.locator(".standing")).to_have_text("blocked (by an organizer)")
    expect(row).to_contain_text("spam answers")
