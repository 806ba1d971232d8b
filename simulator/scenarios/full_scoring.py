"""The `full` scenario's scoring (`simulator.scenarios.full`): the downloaded exports and the platform's own figures
against the ground truth, gold and the review queue, as one summary. A mixin of `FullScenario`: it reads the
scenario's scenes, counts and timings and calls its export step."""

from __future__ import annotations

from typing import Any

from simulator.driver import OrganizerApi, Stats, rounded
from simulator.export_score import (
    missing_categories,
    read_coco,
    read_ilsvrc,
    score_instances,
    truth_boxes,
)
from simulator.ground_truth import label_precision_recall
from simulator.simulated import WorkerKind


class FullScoring:
    """The scoring steps of `FullScenario` (its attributes: scenes, counts, review, export timings...)."""

    # --- scoring -----------------------------------------------------------------------------------------

    def summarize(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        coco = read_coco(self.archives["coco"])
        ilsvrc = read_ilsvrc(self.archives["ilsvrc"])
        # Only production images are scored: the gold images are in the dataset too (the organizer labeled
        # them), and the export may carry their labels; they are counted apart, never as errors or hits.
        exported = coco.positives | ilsvrc.positives
        positives = {(i, k) for i, k in exported if i in self.image_scene}
        truth = {(image_id, key) for image_id, scene in self.image_scene.items() for key in scene.class_keys}
        verify = label_precision_recall(
            [c for c in self.candidates if c in positives], [c for c in self.candidates if c in truth]
        )
        leaves = label_precision_recall(positives, truth)
        true_boxes = truth_boxes({i: s.boxes_by_class() for i, s in self.image_scene.items()})
        boxes = score_instances(
            true_boxes, {key: b for key, b in coco.boxes.items() if key[0] in self.image_scene}
        )
        n = len(self.scenes)
        questions = api.paged(f"/api/v1/datasets/{api.dataset_id}/decisions/")
        box_tasks = sum(self.counts.get(k, 0) for k in ("box_draw", "box_quality", "box_coverage"))
        return {
            "precision": rounded(verify.precision),
            "recall": rounded(verify.recall),
            "votes_per_image": rounded(self.counts.get("verify", 0) / n),
            "questions_per_image": rounded(
                sum(1 for q in questions if q["kind"] in ("image_verify", "hierarchy")) / n
            ),
            "box_coverage": rounded(boxes.coverage),
            "box_accuracy": None,
            "worker_seconds_per_image": rounded(stats.worker_seconds / n, 2),
            "verification_precision": rounded(verify.precision),
            "verification_recall": rounded(verify.recall),
            "verification_labelled": rounded(
                sum(1 for c in self.candidates if c in positives or c in ilsvrc.negatives)
                / max(len(self.candidates), 1)
            ),
            "leaf_precision": rounded(leaves.precision),
            "leaf_recall": rounded(leaves.recall),
            "exported_negatives": len(ilsvrc.negatives),
            "exported_labels_outside_production": len(exported - positives),
            "box_coverage_small": rounded(boxes.small_coverage),
            "box_precision": rounded(boxes.precision),
            "hierarchy_votes_per_image": rounded(self.counts.get("hierarchy", 0) / n),
            "box_tasks_per_image": rounded(box_tasks / n),
            "box_worker_seconds_per_image": rounded(
                sum(self.seconds_by_what.get(k, 0.0) for k in ("box_draw", "box_quality", "box_coverage"))
                / n,
                2,
            ),
            "box_worker_seconds_by_kind": {
                k: rounded(self.seconds_by_what.get(k, 0.0) / n, 2)
                for k in ("box_draw", "box_quality", "box_coverage")
            },
            "detector": None
            if self.detector is None
            else {"recall": self.detector.recall, "proposal_threshold": self.proposal_threshold},
            "questions_waiting": sum(1 for q in questions if q["state"] == "waiting"),
            "questions_open_without_task": sum(
                1 for q in questions if q["state"] in ("waiting", "open") and q["task"] is None
            ),
            "questions_in_review": sum(1 for q in questions if q["state"] == "review"),
            "categories_missing": len(missing_categories([c.key for c in self.classes], coco)),
            "review": {**self.finisher.summary(), "queue": self._review_counts(api)},
            "box_jobs": api.call("GET", f"/api/v1/datasets/{api.dataset_id}/box-jobs/").expect(200)[
                "status_counts"
            ],
            "pipeline": {
                **self._pipeline_figures(api, questions, truth),
                **self._accepted_box_figures(api, true_boxes),
            },
            **({"fixed_majority": self.majority_figures} if self.majority_figures else {}),
            **(self._gold_summary(api, stats) if self.gold_rate else {}),
            "answers_by_kind": dict(sorted(self.counts.items())),
            "images": n,
            "true_instances": boxes.true_instances,
            "small_instances": boxes.small_instances,
            "exported_boxes": boxes.exported_boxes,
            "export_timing": self.export_timing,
            "spammers": sum(1 for w in self.crowd if w.profile.is_spammer),
            "errors": _errors(positives, truth),
        }

    def _gold_summary(self, api: OrganizerApi, stats: Stats) -> dict[str, Any]:
        """Gold overhead and who got blocked (in any task kind). Platform worker ids come from the payment
        listing (each row names the assignment and its worker), matched to the assignments each simulated worker
        answered."""
        api.call("POST", f"/api/v1/datasets/{api.dataset_id}/payments/decide/").expect(200)
        platform_to_sim: dict[int, str] = {}
        for row in api.paged(f"/api/v1/datasets/{api.dataset_id}/payments/"):
            sim = self.assignment_worker.get(row["assignment"])
            if sim is not None:
                platform_to_sim[row["worker"]] = sim
        blocked: dict[str, set[str]] = {}
        for row in api.paged(f"/api/v1/datasets/{api.dataset_id}/workers/"):
            if row["blocked"] and row["worker"] in platform_to_sim:
                blocked.setdefault(platform_to_sim[row["worker"]], set()).add(row["kind"])
        spammers = {w.worker_id for w in self.crowd if w.profile.is_spammer}
        # Weak workers (about 0.6 right everywhere) and colluders are meant to be blocked: counted apart from the
        # honest ones, whose blocking is the gold's false alarm.
        poor = {w.worker_id for w in self.crowd if w.profile.kind in (WorkerKind.WEAK, WorkerKind.COLLUDER)}
        served = sum(self.gold_answers.values())
        return {
            "gold_rate": self.gold_rate,
            "gold_images": len(self.gold_images),
            "gold_share": rounded(served / stats.tasks_answered) if stats.tasks_answered else None,
            "blocked_spammers": sum(1 for w in blocked if w in spammers),
            "blocked_poor": sum(1 for w in blocked if w in poor),
            "blocked_honest": sum(1 for w in blocked if w not in spammers and w not in poor),
            "blocked_by_kind": {
                k: sum(1 for kinds in blocked.values() if k in kinds)
                for k in sorted(set().union(*blocked.values()))
            }
            if blocked
            else {},
        }

    def _review_counts(self, api: OrganizerApi) -> Any:
        return api.call("GET", "/api/v1/review/summary", params={"dataset": api.dataset_id}).expect(200)[
            "counts"
        ]

    def _accepted_box_figures(self, api: OrganizerApi, true_boxes) -> dict[str, Any]:
        """The accepted boxes' coverage, scored as the exported ones are: what the export would hold if every
        accepted box were in it (the export's `box_coverage` beside it shows what did not reach the file)."""
        accepted: dict[tuple[int, str], list[list[float]]] = {}
        for r in api.paged(f"/api/v1/datasets/{api.dataset_id}/boxes/", {"state": "accepted"}):
            if r["image"] in self.image_scene:
                accepted.setdefault((r["image"], r["concept"]), []).append(
                    [r["x1"], r["y1"], r["x2"], r["y2"]]
                )
        score = score_instances(true_boxes, accepted)
        return {
            "box_coverage": rounded(score.coverage),
            "box_coverage_small": rounded(score.small_coverage),
            "accepted_boxes": score.exported_boxes,
        }

    def _pipeline_figures(self, api: OrganizerApi, questions: list[dict], truth: set) -> dict[str, Any]:
        """What the platform's own read APIs say, beside what the export says: a gap between the two is a
        label that never reached the final labels."""
        accepted = {
            (q["image"], q["concept"])
            for q in questions
            if q["kind"] == "image_verify" and q["state"] == "accepted"
        } & set(self.candidates)
        verify = label_precision_recall(accepted, [c for c in self.candidates if c in truth])
        rows = api.paged(f"/api/v1/datasets/{api.dataset_id}/multilabel/")
        present = {(r["image"], p["wnid"]) for r in rows for p in r["present"]}
        leaves = label_precision_recall(present, truth)
        return {
            "verification_precision": rounded(verify.precision),
            "verification_recall": rounded(verify.recall),
            "leaf_precision": rounded(leaves.precision),
            "leaf_recall": rounded(leaves.recall),
            "images_done": sum(1 for r in rows if r["status"] == "done"),
        }


# How many wrong labels of each sort the summary lists (image id, class), for reading a run's database after it.
ERRORS_LISTED = 40


def _errors(predicted: set, truth: set) -> dict[str, list]:
    """The exported labels that are wrong (false positives) and the true ones missing (false negatives), as
    [image id, class] pairs, sorted, at most ERRORS_LISTED of each: where to look in the run's database."""
    return {
        "false_positives": sorted([list(pair) for pair in predicted - truth])[:ERRORS_LISTED],
        "false_negatives": sorted([list(pair) for pair in truth - predicted])[:ERRORS_LISTED],
    }
