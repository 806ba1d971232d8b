"""The organizer's settings page in real Chromium (issue 34, items 2 and 4): the page warns when the settings
need more distinct workers than the crowd has and a preset fills the forms to fit; the instructions written in
its editor reach the worker page (above the task and in the help sheet) as inert text; the forms for pay,
session sizes and task priorities save, and show the API's refusal by name. No axe-core violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import queue
from annotation.models import AuditEntry, Task, TaskInstructions
from boxes.models import BoxSettings
from consensus.models import ConsensusSettings
from crowd.models import BundleSize
from gold.models import GoldSettings
from organize.models import CostSettings
from tests import factories
from tests.browser_fixtures import sign_in
from tests.e2e.test_accessibility import violations
from tests.e2e.test_worker_page import sign_in as worker_sign_in
from tests.e2e.test_worker_page import wait_for_image_loaded
from tests.security.xss_corpus import INJECTED_ELEMENTS_JS, PAYLOADS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def unexpected(errors: list[str]) -> list[str]:
    """Console errors other than the browser's note of the 400s these tests provoke on purpose."""
    return [e for e in errors if "status of 400 (Bad Request)" not in e]


def settings_page(page, base_url: str, dataset) -> None:
    sign_in(page, base_url, "organizer", f"/organize/datasets/{dataset.pk}/settings/")
    page.wait_for_url(f"{base_url}/organize/datasets/{dataset.pk}/settings/")
    expect(page.locator("#work-settings[data-ready='true']")).to_have_count(1)


@pytest.fixture
def crowd_of_five(live_server):
    """A dataset five workers have worked in, under the default settings (10 calibration votes, cap 12)."""
    organizer = factories.user_with_roles("organizer", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    for n in range(5):
        worker = factories.user_with_roles(f"w{n}", ("workers",)).worker
        factories.TaskFactory(image=factories.ImageFactory(dataset=dataset), kind="binary_vote")
        assert queue.task_lease_next(worker=worker, kinds_wanted=("binary_vote",), dataset_id=dataset.pk)
    return dataset


def test_the_page_warns_a_small_crowd_and_the_small_team_preset_fits_it(page, live_server, crowd_of_five):
    dataset = crowd_of_five
    settings_page(page, live_server.url, dataset)
    warnings = page.locator("#crowd-warnings li")
    expect(page.locator("#crowd-warnings li[data-warning='calibration_votes']")).to_contain_text(
        "Calibration needs 10 distinct workers per question; 5 have joined this dataset."
    )
    expect(warnings).to_have_count(2)  # the vote cap of 12 too
    assert violations(page) == []

    # Typing a value the crowd can give clears its warning before anything is saved.
    page.get_by_label("Votes per calibration question").fill("5")
    expect(page.locator("#crowd-warnings li[data-warning='calibration_votes']")).to_have_count(0)
    page.get_by_label("Votes per calibration question").fill("10")
    expect(page.locator("#crowd-warnings li[data-warning='calibration_votes']")).to_have_count(1)

    page.get_by_role("button", name="Fill in: Small in-house team").click()
    expect(page.get_by_label("Votes per calibration question")).to_have_value("3")
    expect(page.get_by_label("Vote cap (then review)")).to_have_value("5")
    expect(page.get_by_label("Second cap: the most reliable half votes on up to (0: off)")).to_have_value("0")
    expect(page.get_by_label("Qualification questions")).to_have_value("0")
    expect(warnings).to_have_count(0)
    expect(page.locator("#crowd-summary")).to_contain_text("5 workers can vote in this dataset")
    assert not ConsensusSettings.objects.filter(dataset=dataset).exists()  # filled in, not saved

    page.get_by_role("button", name="Save consensus settings").click()
    expect(page.locator("#consensus-form .status")).to_contain_text("Saved at")
    page.get_by_role("button", name="Save gold settings").click()
    expect(page.locator("#gold-form .status")).to_contain_text("Saved at")
    saved = ConsensusSettings.objects.get(dataset=dataset)
    assert (saved.calibration_votes, saved.vote_cap, saved.target_precision) == (3, 5, 0.99)
    assert saved.extension_cap == 0  # the preset's: a team of five has all voted by the cap
    assert GoldSettings.objects.get(dataset=dataset).qualification_size == 0

    # A value the API refuses is named on the page, and nothing changes.
    page.get_by_label("Votes per calibration question").fill("8")
    page.get_by_role("button", name="Save consensus settings").click()
    expect(page.locator("#consensus-form .error")).to_have_text("calibration_votes: cannot exceed vote_cap")
    assert ConsensusSettings.objects.get(dataset=dataset).calibration_votes == 3
    assert unexpected(page.console_errors) == []


def test_instructions_written_on_the_settings_page_show_on_the_worker_page_as_text(
    page, chromium, live_server, two_vote_tasks
):
    dataset = two_vote_tasks[0].dataset
    lines = "\n".join(f"- {payload}" for payload in PAYLOADS)
    text = f"Answer yes only when a real dog is visible.\n\nNot counted:\n{lines}"
    settings_page(page, live_server.url, dataset)
    page.locator("#instructions-kind").select_option("binary_vote")
    page.get_by_label("Instructions", exact=True).fill(text)
    page.get_by_role("button", name="Save instructions").click()
    expect(page.locator("#instructions-form [role=status]")).to_contain_text(
        "Saved: workers see these instructions"
    )
    assert TaskInstructions.objects.get(dataset=dataset, kind="binary_vote").text == text

    worker_context = chromium.new_context(viewport={"width": 1100, "height": 800})
    worker = worker_context.new_page()
    errors = []
    worker.on("pageerror", lambda exc: errors.append(str(exc)))
    dialogs = []
    worker.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        factories.user_with_roles("ann", ("workers",))
        worker_sign_in(worker, live_server.url, "ann")
        wait_for_image_loaded(worker)
        box = worker.locator("#task-body details.task-instructions")
        expect(box).to_have_attribute("open", "")
        expect(box.locator("p").first).to_have_text("Answer yes only when a real dog is visible.")
        expect(box.locator("li")).to_have_count(len(PAYLOADS))
        assert box.locator("li").all_text_contents() == list(PAYLOADS)  # every payload shown as typed
        assert (
            worker.evaluate(INJECTED_ELEMENTS_JS, ["main", ["main dialog#shortcuts > form[method=dialog]"]])
            == []
        )

        worker.keyboard.press("?")
        sheet = worker.get_by_role("dialog", name="Instructions and keyboard shortcuts")
        expect(sheet.locator("#help-instructions")).to_be_visible()
        expect(sheet.locator("#help-instructions p").first).to_have_text(
            "Answer yes only when a real dog is visible."
        )
        expect(sheet.locator("#help-instructions li")).to_have_count(len(PAYLOADS))
        assert violations(worker) == []
        assert dialogs == [] and errors == []
    finally:
        worker_context.close()


def test_pay_session_sizes_and_priorities_save_and_refusals_are_named(page, live_server, two_vote_tasks):
    dataset = two_vote_tasks[0].dataset
    settings_page(page, live_server.url, dataset)

    page.get_by_label("Currency").fill("EU")
    page.get_by_label("Reward per answer: Plain yes/no votes").fill("0.03")
    page.get_by_role("button", name="Save pay").click()
    expect(page.locator("#pay-form .error")).to_contain_text("currency: a three-letter currency code")
    page.get_by_label("Currency").fill("EUR")
    page.get_by_role("button", name="Save pay").click()
    expect(page.locator("#pay-form .status")).to_contain_text("Saved at")
    assert CostSettings.objects.get(dataset=dataset).rewards["binary_vote"] == 0.03

    page.get_by_label("Tasks per session: binary_vote").fill("0")
    page.get_by_role("button", name="Save session sizes").click()
    expect(page.locator("#sessions-form .error")).to_contain_text(
        "binary_vote: a session answers 1 to 500 tasks"
    )
    assert not BundleSize.objects.exists()
    page.get_by_label("Tasks per session: binary_vote").fill("20")
    page.get_by_role("button", name="Save session sizes").click()
    expect(page.locator("#sessions-form .status")).to_contain_text("Saved at")
    assert BundleSize.objects.get(dataset=dataset, kind="binary_vote").size == 20

    expect(page.locator("#priority-groups tbody tr[data-stage='binary_vote']")).to_contain_text("2")
    page.locator("#priority-stage").select_option("box_draw")
    page.get_by_role("button", name="Shift priority").click()
    expect(page.locator("#priority-error")).to_contain_text("change: no waiting task of this dataset matches")
    page.locator("#priority-stage").select_option("binary_vote")
    page.get_by_label("Shift by (−100 to 100)").fill("25")
    page.get_by_role("button", name="Shift priority").click()
    expect(page.locator("#priority-status")).to_have_text("2 waiting tasks moved up by 25.")
    assert set(Task.objects.filter(dataset=dataset).values_list("priority", flat=True)) == {25}
    assert violations(page) == []
    assert unexpected(page.console_errors) == []


def test_a_study_link_participant_sees_the_instructions_above_the_task(page, live_server):
    from annotation.instructions import instructions_set
    from crowd.models import StudyLink

    organizer = factories.user_with_roles("olga", ("organizers",))
    dataset = factories.DatasetFactory(organizers=[organizer])
    BundleSize.objects.create(dataset=dataset, kind="binary_vote", size=2)
    factories.TaskFactory.create_batch(2, image__dataset=dataset)
    instructions_set(
        dataset=dataset, kind="binary_vote", text="Count cartoons as no.\n- <b>bold?</b>", user=organizer
    )
    link = StudyLink.objects.create(dataset=dataset, kind="binary_vote")
    failed = []
    page.on("response", lambda r: r.status >= 400 and failed.append(r.url))
    page.goto(f"{live_server.url}/study/{link.key}/?PROLIFIC_PID=bob")
    box = page.locator("#task-body details.task-instructions")
    expect(box.locator("p")).to_have_text("Count cartoons as no.")
    expect(box.locator("li")).to_have_text("<b>bold?</b>")
    assert box.locator("b").count() == 0
    # Every request of the page succeeded; the console's one 404 is the browser's own icon request (the
    # session page links no icon), which the page's responses do not include.
    assert failed == []
    assert [e for e in page.console_errors if "404 (Not Found)" not in e] == []


def test_the_draw_mode_is_chosen_on_the_settings_page_and_audited(page, live_server, two_vote_tasks):
    dataset = two_vote_tasks[0].dataset
    settings_page(page, live_server.url, dataset)
    mode = page.get_by_label("Draw mode")
    expect(mode).to_have_value("corners")
    mode.select_option("extreme")
    page.get_by_role("button", name="Save box settings").click()
    expect(page.locator("#box-form .status")).to_contain_text("Saved at")
    assert BoxSettings.objects.get(dataset=dataset).draw_mode == "extreme"
    assert AuditEntry.objects.filter(dataset=dataset, action="box_settings.change").count() == 1
    page.reload()
    expect(page.get_by_label("Draw mode")).to_have_value("extreme")
    assert violations(page) == []
    assert unexpected(page.console_errors) == []
