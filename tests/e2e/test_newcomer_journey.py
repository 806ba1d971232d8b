"""A newcomer's whole journey in real Chromium (issue 34's done-when), with no shell after `create_organizer`:
the organizer signs in with the printed password, creates a dataset, uploads images, picks classes from a
hierarchy file, imports gold, starts verification of several classes at once and Algorithm 1, invites six
workers and a reviewer by link; the crowd works by keyboard and mouse; a question the crowd split stalls, the
dataset page says so and settles it to review; the reviewer decides it; boxing starts on the images verified to
show the class only; the crowd draws and checks the boxes; the organizer freezes a split, exports COCO and the
download loads in pycocotools. axe-core finds no WCAG 2.1 A/AA violation on any page visited.

The test is a list of small steps over one `Journey` (the browser, the organizer's page, the crowd's pages, what
was made): a new feature's step is one more function in `STEPS`. The crowd's eyes are the test's truth table:
each worker reads what the page shows (the assignment it holds) and answers as an honest person would, except
on the one image whose class the crowd splits on (half say yes).
"""

from __future__ import annotations

import io
import json
import re
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, Page, expect

from annotation.geometry import iou_matrix
from annotation.models import Assignment, Box, BoxJob, BoxState, FinalLabel
from benchmark.models import SplitVersion
from consensus.models import Question
from tests.conftest import png_bytes
from tests.e2e.test_accessibility import violations
from tests.waiting import GENEROUS_SECONDS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.journey,
    pytest.mark.django_db(transaction=True),
]

ORGANIZER = "olga@example.org"
HIERARCHY = Path("fixtures/hierarchies/voc20.json")
DOG, CAT = "n02084071", "n02121808"
SIZE = (160, 120)
# The truth the crowd sees: file name -> {class wnid: its one object's box}. "unsure.png" shows a dog to half
# the crowd (its verification question splits and stalls); every other answer is honest.
TRUTH: dict[str, dict[str, tuple[int, int, int, int]]] = {
    "dog-1.png": {DOG: (20, 16, 120, 100)},
    "dog-2.png": {DOG: (40, 10, 150, 90)},
    "cat-1.png": {CAT: (10, 20, 90, 110)},
    "unsure.png": {},
}
UNSURE = "unsure.png"
WORKERS = [f"worker{n}" for n in range(6)]
WORKER_PASSWORD = "a-long-passphrase-42"


@dataclass
class Journey:
    base: str
    browser: Browser
    tmp: Path
    organizer: Page | None = None
    dataset_id: int | None = None
    invitations: list[str] = field(default_factory=list)
    crowd: dict[str, Page] = field(default_factory=dict)
    reviewer: Page | None = None
    checked: set[str] = field(default_factory=set)  # paths axe has checked
    leaves_under: dict[str, set[str]] = field(default_factory=dict)
    answers: dict[str, int] = field(default_factory=dict)  # per kind of task

    def new_page(self) -> Page:
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        page.console_errors = []
        page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
        return page

    def axe(self, page: Page) -> None:
        """No WCAG 2.1 A/AA violation on the page as it is now (every page the journey visits is checked)."""
        page.wait_for_load_state("networkidle")
        assert violations(page) == [], page.url
        self.checked.add(re.sub(r"/\d+/", "/N/", page.url.removeprefix(self.base).split("?")[0]))

    def dataset_url(self, tab: str = "") -> str:
        return f"{self.base}/organize/datasets/{self.dataset_id}/{tab}"


# --- the organizer --------------------------------------------------------------------------------------------


def organizer_signs_in(j: Journey) -> None:
    out = io.StringIO()
    call_command("create_organizer", ORGANIZER, stdout=out)  # the one shell step
    password = re.search(r"^password: (\S+)$", out.getvalue(), re.M).group(1)
    page = j.organizer = j.new_page()
    page.goto(f"{j.base}/")
    j.axe(page)
    page.goto(f"{j.base}/accounts/login/?next=/organize/")
    j.axe(page)
    page.get_by_label("Username").fill(ORGANIZER)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{j.base}/organize/")
    j.axe(page)


def organizer_creates_a_dataset(j: Journey) -> None:
    page = j.organizer
    page.get_by_label("Name").fill("pets")
    page.get_by_role("button", name="Create dataset").click()
    expect(page.locator("h1")).to_have_text("pets")
    j.dataset_id = int(re.search(r"/datasets/(\d+)/", page.url).group(1))
    expect(page.locator("#checklist-steps li.done")).to_have_count(0)
    j.axe(page)


def organizer_uploads_images(j: Journey) -> None:
    page = j.organizer
    folder = j.tmp / "images"
    folder.mkdir()
    for seed, name in enumerate(TRUTH):
        (folder / name).write_bytes(png_bytes(size=SIZE, seed=seed))
    page.get_by_role("link", name="Images", exact=True).click()
    expect(page.locator("#grid-status")).to_have_text("0 images")
    page.locator("#file-input").set_input_files([str(folder / name) for name in TRUTH])
    expect(page.locator("#upload-summary")).to_have_text(f"{len(TRUTH)} stored, 0 refused, 0 waiting")
    expect(page.locator("#grid figure")).to_have_count(len(TRUTH))
    j.axe(page)


def organizer_picks_classes(j: Journey) -> None:
    page = j.organizer
    page.get_by_role("link", name="Classes", exact=True).click()
    page.wait_for_load_state("networkidle")
    page.locator("#hierarchy-file").set_input_files(str(HIERARCHY))
    expect(page.locator("#upload-status")).to_contain_text("Loaded: PASCAL VOC 20")
    for wnid in (DOG, CAT):
        page.locator(f"#choices input[value='{wnid}']").check()
    page.get_by_role("button", name="Save the selection").click()
    expect(page.locator("#pick-status")).to_have_text("2 classes selected")
    j.axe(page)
    nodes = json.loads(HIERARCHY.read_text())["nodes"]
    parents = {n["id"]: n.get("parents", []) for n in nodes}
    for node in nodes:
        if node.get("leaf"):
            stack = [node["id"]]
            while stack:
                at = stack.pop()
                j.leaves_under.setdefault(at, set()).add(node["id"])
                stack.extend(parents.get(at, []))


def organizer_imports_gold_and_settings(j: Journey) -> None:
    page = j.organizer
    page.get_by_role("link", name="Settings & gold").click()
    page.wait_for_load_state("networkidle")
    rows = ["kind,concept,image,answer"]
    rows += [
        f"image_verify,{DOG},{name},{'yes' if DOG in TRUTH[name] else 'no'}"
        for name in TRUTH
        if name != UNSURE
    ]
    page.get_by_label("or paste it").fill("\n".join(rows) + "\n")
    page.get_by_role("button", name="Import gold items").click()
    expect(page.locator("#gold-import-status")).to_contain_text("3")
    expect(page.locator("#gold-items tbody tr")).to_have_count(3)
    # A team of six: no qualification round (three gold items could not make one); gold is mixed in.
    gold = page.locator("#gold-form")
    gold.get_by_label("Qualification questions").fill("0")
    gold.get_by_label("Right answers to qualify").fill("0")
    gold.get_by_role("button", name="Save gold settings").click()
    expect(gold.locator("[role=status]")).not_to_be_empty()
    expect(gold.locator("[role=alert]")).to_be_empty()
    j.axe(page)


def organizer_starts_verification_and_algorithm_1(j: Journey) -> None:
    page = j.organizer
    page.get_by_role("link", name="Progress & pipelines").click()
    form = page.locator("#start-verification")
    expect(form.locator("input[name='concept']")).to_have_count(2)
    form.get_by_label("Select all").check()
    form.get_by_label("Calibrate first").uncheck()  # a team of six cannot give a calibration its ten voters
    form.get_by_role("button", name="Start verification…").click()
    expect(page.locator("#confirm-text")).to_have_text("Verify the candidate images of 2 classes?")
    page.locator("#confirm-ok").click()
    expect(page.locator("#audit tbody tr[data-action='verification.start']")).to_have_count(2)
    page.get_by_role("button", name="Start multi-label questioning…").click()
    page.locator("#confirm-ok").click()
    expect(page.locator("#audit tbody tr[data-action='multilabel.start']")).to_have_count(1)
    j.axe(page)


def organizer_invites(j: Journey, role: str, count: int) -> list[str]:
    page = j.organizer
    page.get_by_role("link", name="People", exact=True).click()
    page.wait_for_load_state("networkidle")  # the module listens before the form is submitted
    invitations = page.locator("#invitations tbody tr")
    urls = []
    for _ in range(count):
        made = invitations.count()
        page.get_by_label("Role").select_option(role)
        page.get_by_role("button", name="Create invitation link").click()
        expect(invitations).to_have_count(made + 1)
        urls.append(page.locator("#issued-url").input_value())
    assert len(set(urls)) == count and all("/invite/" in url for url in urls)
    j.axe(page)
    return urls


def accept_invitation(j: Journey, url: str, username: str) -> Page:
    page = j.new_page()
    page.goto(url)
    j.axe(page)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(WORKER_PASSWORD)
    page.get_by_role("button", name="Create my account").click()
    expect(page.locator("h1")).to_have_text(f"Welcome, {username}")
    j.axe(page)
    page.get_by_role("link", name="Continue").click()
    return page


def crowd_joins(j: Journey) -> None:
    for url, username in zip(organizer_invites(j, "workers", len(WORKERS)), WORKERS, strict=True):
        page = accept_invitation(j, url, username)
        expect(page).to_have_url(f"{j.base}/worker/")
        j.crowd[username] = page
    j.axe(next(iter(j.crowd.values())))


# --- the crowd ------------------------------------------------------------------------------------------------


def on_screen(assignment_id: int) -> tuple[str, str, str, list[float] | None, list[list[float]]]:
    """What the worker's eyes see on the task they hold: the image's file name, the kind of question, the
    class, the box asked about (if any) and the boxes already on the image."""
    task = Assignment.objects.select_related("task__concept", "task__image").get(pk=assignment_id).task
    question = Question.objects.select_related("box").filter(task=task).first()
    kind = "box_draw" if task.kind == "box_draw" else (question.kind if question else "image_verify")
    box = question.box if question is not None else None
    shown = Box.objects.filter(image=task.image, concept=task.concept).exclude(
        state__in=(BoxState.REJECTED, BoxState.REMOVED)
    )
    coords = lambda b: [b.x1, b.y1, b.x2, b.y2]  # noqa: E731
    return (
        task.image.original_name,
        kind,
        task.concept.wnid,
        coords(box) if box else None,
        [coords(b) for b in shown],
    )


def draw(page: Page, box: tuple[int, int, int, int]) -> None:
    """Drag the box with the mouse over the shown (scaled) image, then Enter."""
    svg = page.locator("svg.overlay").bounding_box()
    sx, sy = svg["width"] / SIZE[0], svg["height"] / SIZE[1]
    page.mouse.move(svg["x"] + box[0] * sx, svg["y"] + box[1] * sy)
    page.mouse.down()
    page.mouse.move(svg["x"] + box[2] * sx, svg["y"] + box[3] * sy, steps=6)
    page.mouse.up()
    expect(page.locator("rect.box.draft")).to_be_visible()
    page.keyboard.press("Enter")


def covered(truth_box, boxes, at: float) -> bool:
    return (
        bool(boxes)
        and float(iou_matrix(np.asarray([truth_box], float), np.asarray(boxes, float)).max()) >= at
    )


def answer_one(j: Journey, username: str, page: Page, answered: int) -> bool:
    """Answer the task on screen as this worker would; False when the page says no task is waiting."""
    body = page.locator("#task-body[data-answerable]")
    idle = page.locator("#status", has_text="No tasks are waiting")
    try:
        expect(body.or_(idle)).to_be_visible(timeout=30_000)
    except AssertionError:
        raise AssertionError(f"{username}'s page: {page.locator('main').inner_text()}") from None
    if idle.is_visible():
        return False
    before = int(page.locator("#answered").inner_text())  # counts since the page was loaded
    name, kind, wnid, box, shown = on_screen(int(body.get_attribute("data-assignment")))
    truth = TRUTH[name]
    j.answers[kind] = j.answers.get(kind, 0) + 1
    if kind == "box_draw":
        if wnid not in truth or covered(truth[wnid], shown, 0.5):
            page.keyboard.press("n")
        else:
            draw(page, truth[wnid])
    else:
        if kind == "box_quality":
            yes = wnid in truth and covered(truth[wnid], [box], 0.7)
        elif kind == "box_coverage":
            yes = wnid not in truth or covered(truth[wnid], shown, 0.5)
        elif name == UNSURE and wnid == DOG and kind == "image_verify":
            yes = WORKERS.index(username) % 2 == 0
        else:
            yes = bool(j.leaves_under.get(wnid, {wnid}) & set(truth))
        if answered % 2:
            page.keyboard.press("y" if yes else "n")
        else:
            page.locator("button.answer.yes" if yes else "button.answer.no").click()
    expect(page.locator("#answered")).to_have_text(str(before + 1))
    return True


def crowd_works_until_idle(j: Journey) -> int:
    """The crowd takes turns, one task each, until every worker's page says no task is waiting (twice in a row:
    a decision may open new questions). Returns the answers given."""
    counts = dict.fromkeys(j.crowd, 0)
    for page in j.crowd.values():
        page.reload()
    idle_rounds = 0
    while idle_rounds < 2:
        busy = False
        for username, page in j.crowd.items():
            if answer_one(j, username, page, counts[username]):
                counts[username] += 1
                busy = True
        if busy:
            idle_rounds = 0
        else:
            idle_rounds += 1
            for page in j.crowd.values():
                page.reload()
    return sum(counts.values())


def crowd_verifies_and_answers_the_hierarchy(j: Journey) -> None:
    answers = crowd_works_until_idle(j)
    assert answers > 0
    j.axe(next(iter(j.crowd.values())))  # the idle worker page
    # Six voters each, and still nothing decided: calibration wants ten (the stall below).
    assert not FinalLabel.objects.filter(dataset_id=j.dataset_id).exists()


def organizer_resolves_the_stalls(j: Journey) -> None:
    """Six workers cannot give a calibration question its ten voters: the dataset page says so and offers to
    lower the calibration votes to the crowd's size, then to settle what the table leaves undecided."""
    page = j.organizer
    page.goto(j.dataset_url())
    card = page.locator("#stalls")
    expect(card).to_be_visible()
    short = card.locator("li[data-stall='calibration_short']")
    expect(short).to_contain_text("Calibration needs 10 distinct workers per question; 6 have worked")
    j.axe(page)
    short.get_by_role("button", name="Lower the calibration votes to 6").click()
    expect(page.locator("#stall-status")).to_have_text(
        "Calibration now asks 6 votes per question.", timeout=30_000
    )
    page.wait_for_load_state("networkidle")
    expect(short).to_have_count(0)
    # The questions that had their six votes are judged by their batch's table at once; those it leaves open
    # need a voter nobody left can be, and the page offers to settle them.
    page.reload()
    page.wait_for_load_state("networkidle")
    starved = card.locator("li[data-stall='starved_questions']")
    if starved.count():
        starved.get_by_role("button", name="Settle these questions now").click()
        expect(page.locator("#stall-status")).to_contain_text("Settled: ", timeout=60_000)
    j.axe(page)
    present = set(
        FinalLabel.objects.filter(
            dataset_id=j.dataset_id, present=True, concept__wnid__in=(DOG, CAT)
        ).values_list("image__original_name", "concept__wnid")
    )
    # The honest answers decide as the truth says; the split question is settled either way.
    truly = {(name, wnid) for name, objects in TRUTH.items() for wnid in objects}
    assert present - {(UNSURE, DOG)} == truly
    crowd_works_until_idle(j)  # Algorithm 1 goes on below its first questions


def organizer_starts_boxing_on_verified_images(j: Journey) -> None:
    page = j.organizer
    page.goto(j.dataset_url())
    form = page.locator("#start-boxes")
    form.get_by_label("Class").select_option(DOG)
    form.get_by_role("button", name="Start boxing…").click()
    expect(page.locator("#confirm-text")).to_have_text("Start boxing dog on the images verified to show it?")
    page.locator("#confirm-ok").click()
    verified = set(
        FinalLabel.objects.filter(dataset_id=j.dataset_id, concept__wnid=DOG, present=True).values_list(
            "image_id", flat=True
        )
    )
    # Algorithm 1 may have started boxing already on an image it finished (multilabel calls boxes.services): the
    # page counts those apart, and together they are the verified images, no other.
    status = page.locator("#start-status")
    expect(status).to_have_text(
        re.compile(r"^Boxing dog: \d+ new job\(s\), \d+ image\(s\) already had one\.$")
    )
    new, already = map(int, re.findall(r"\d+", status.inner_text()))
    assert new + already == len(verified)
    assert set(BoxJob.objects.filter(concept__wnid=DOG).values_list("image_id", flat=True)) == verified
    j.axe(page)


def crowd_boxes(j: Journey) -> None:
    """Drawn by mouse, checked and covered by keys and clicks: each dog gets its box; the job on an image with
    no dog goes to review (coverage confirmed with no box)."""
    crowd_works_until_idle(j)
    accepted = {
        (name, wnid): (x1, y1, x2, y2)
        for name, wnid, x1, y1, x2, y2 in Box.objects.filter(state=BoxState.ACCEPTED).values_list(
            "image__original_name", "concept__wnid", "x1", "y1", "x2", "y2"
        )
    }
    # The dogs boxed from the organizer's start; Algorithm 1 may have boxed the cat it found too.
    assert (
        {("dog-1.png", DOG), ("dog-2.png", DOG)}
        <= set(accepted)
        <= {("dog-1.png", DOG), ("dog-2.png", DOG), ("cat-1.png", CAT)}
    )
    for (name, wnid), box in accepted.items():
        assert covered(TRUTH[name][wnid], [box], 0.9)
    jobs = {
        (name, wnid): status
        for name, wnid, status in BoxJob.objects.values_list(
            "image__original_name", "concept__wnid", "status"
        )
    }
    assert jobs[("dog-1.png", DOG)] == jobs[("dog-2.png", DOG)] == "done"
    if (UNSURE, DOG) in jobs:
        assert jobs[(UNSURE, DOG)] == "review"


def reviewer_decides(j: Journey) -> None:
    (url,) = organizer_invites(j, "reviewers", 1)
    page = j.reviewer = accept_invitation(j, url, "rita")
    page.goto(f"{j.base}/review/")
    item = page.locator("#item:not([hidden])")
    empty = page.locator("#status", has_text="The review queue is empty")
    # The job on the image without a dog waits for a reviewer (its item may land a moment after the job).
    wanted = 1 if BoxJob.objects.filter(image__original_name=UNSURE).exists() else 0
    decided = 0
    # Bounded by time, generously, not by a count of reloads a slow machine may use up before the item lands.
    deadline = time.monotonic() + GENEROUS_SECONDS
    while time.monotonic() < deadline:
        expect(item.or_(empty)).to_be_visible()
        if empty.is_visible():
            if decided >= wanted:
                break
            page.wait_for_timeout(1000)
            page.reload()
            continue
        shown = item.get_attribute("data-item")
        if decided == 0:
            j.axe(page)
        page.keyboard.press(page.locator("#choices button kbd").first.inner_text())
        decided += 1
        expect(page.locator("#decided")).to_have_text(str(decided))
        expect(page.locator(f"#item[data-item='{shown}']:not([hidden])")).to_have_count(0)
    j.axe(page)
    assert decided == wanted


def organizer_splits_and_exports(j: Journey) -> None:
    from pycocotools.coco import COCO

    page = j.organizer
    page.goto(j.dataset_url("benchmark/"))
    page.wait_for_load_state("networkidle")
    page.get_by_role("button", name="Preview split").click()
    row = page.locator("#versions tbody tr[data-version='1']")
    expect(row.locator(".counts")).to_contain_text("train")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Freeze version 1").click()
    expect(row).to_contain_text("frozen")
    page.get_by_label("Format").select_option("coco")
    page.get_by_role("button", name="Start export").click()
    expect(page.locator("#export-status")).to_contain_text("done", timeout=60_000)
    j.axe(page)
    with page.expect_download() as download:
        page.locator("#export-download").click()
    path = j.tmp / "export.zip"
    download.value.save_as(path)
    archive = zipfile.ZipFile(path)
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["format"] == "coco"
    counts = SplitVersion.objects.get(dataset_id=j.dataset_id).manifest["counts"]
    # What leaves equals what is inside: an image whose labels are not final yet is left out, and the
    # manifest says so by split and reason (the page summarises it).
    left_out = manifest["completeness"]["images_left_out"]
    print("left out of the export:", left_out["by_reason"])
    expect(page.locator("#export-completeness-summary")).not_to_be_empty()
    annotations = 0
    parts = [n for n in archive.namelist() if re.fullmatch(r"annotations/instances_\w+\.json", n)]
    assert parts
    for name in parts:
        (j.tmp / "part.json").write_bytes(archive.read(name))
        coco = COCO(str(j.tmp / "part.json"))
        split = name.removeprefix("annotations/instances_").removesuffix(".json")
        assert len(coco.getImgIds()) + left_out["by_split"].get(split, 0) == counts[split]
        assert DOG in {c.get("wnid") for c in coco.loadCats(coco.getCatIds())}
        annotations += len(coco.getAnnIds())
    assert annotations <= Box.objects.filter(state=BoxState.ACCEPTED).count()


STEPS: list[Callable[[Journey], None]] = [
    organizer_signs_in,
    organizer_creates_a_dataset,
    organizer_uploads_images,
    organizer_picks_classes,
    organizer_imports_gold_and_settings,
    organizer_starts_verification_and_algorithm_1,
    crowd_joins,
    crowd_verifies_and_answers_the_hierarchy,
    organizer_resolves_the_stalls,
    organizer_starts_boxing_on_verified_images,
    crowd_boxes,
    reviewer_decides,
    organizer_splits_and_exports,
]


def test_a_newcomer_runs_the_whole_journey_in_the_browser(chromium, live_server, tmp_path):
    pytest.importorskip("pycocotools.coco")
    journey = Journey(base=live_server.url, browser=chromium, tmp=tmp_path)
    for step in STEPS:
        step(journey)
    # axe has checked every kind of page the journey went through.
    assert {"/", "/accounts/login/", "/organize/", "/worker/", "/review/"} <= journey.checked
    assert {
        f"/organize/datasets/N/{tab}"
        for tab in ("", "images/", "classes/", "settings/", "people/", "benchmark/")
    } <= journey.checked
    for page in [journey.organizer, journey.reviewer, *journey.crowd.values()]:
        assert page.console_errors == []
