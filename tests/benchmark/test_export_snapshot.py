"""An export reads the database at one moment (`selectors.snapshot`): on PostgreSQL its streams (images, boxes,
labels, the hidden truth beside it) come from one read-only transaction, so a change committed while it runs is
in none of them; the same export taken inside a caller's transaction (no snapshot) writes the same files; and a
job's progress, written beside the read-only transaction through a connection of its own, is seen by others at
once."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.db import connection, connections, transaction

from annotation.models import FinalBox
from benchmark import exporters, selectors, services
from benchmark.exporters.base import ExportContext
from benchmark.models import ExportJob, JobState
from tests.benchmark.test_export_completeness import FORMATS

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def in_another_connection(work):
    """Run `work` in a thread of its own (so on a connection of its own, committed when it returns), and wait."""
    failure: list[BaseException] = []

    def run():
        try:
            work()
        except BaseException as exc:  # noqa: BLE001  (re-raised in the test's thread)
            failure.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_in_its_snapshot_writes_what_one_inside_a_transaction_writes(
    labelled, tmp_path, monkeypatch, fmt
):
    dataset = labelled["dataset"]
    moment = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(
        exporters, "utcnow", lambda: moment
    )  # both exports' time, so their bytes can be equal
    assert selectors.snapshot_taken(connection)
    services.export_run(
        dataset=dataset, format_name=fmt, split="all", out=tmp_path / "snap", include_images=False
    )
    with transaction.atomic():
        assert not selectors.snapshot_taken(connection)
        services.export_run(
            dataset=dataset, format_name=fmt, split="all", out=tmp_path / "plain", include_images=False
        )
    snap, plain = files_of(tmp_path / "snap"), files_of(tmp_path / "plain")
    assert snap.keys() == plain.keys() and snap == plain
    assert files_of(tmp_path / "snap-test-groundtruth") == files_of(tmp_path / "plain-test-groundtruth")


def test_a_change_committed_while_the_export_runs_is_in_none_of_its_files(labelled, tmp_path, monkeypatch):
    """COCO writes every image before the first box: the boxes, deleted and committed by another connection
    right after the first image, are still all written, as the export's moment held them."""
    dataset = labelled["dataset"]
    boxes_before = FinalBox.objects.filter(dataset=dataset).count()
    assert boxes_before > 0
    original = ExportContext.image_done
    changed = []

    def image_done(self):
        if not changed:
            in_another_connection(lambda: FinalBox.objects.filter(dataset=dataset).delete())
            changed.append(True)
        original(self)

    monkeypatch.setattr(ExportContext, "image_done", image_done)
    manifest, _ = services.export_run(
        dataset=dataset, format_name="coco", split="all", out=tmp_path / "coco", include_images=False
    )
    assert changed and FinalBox.objects.filter(dataset=dataset).count() == 0  # the deletion was committed
    written = sum(
        len(json.loads(path.read_text()).get("annotations", []))
        for path in (tmp_path / "coco" / "annotations").glob("*.json")
    )
    hidden = sum(
        len(json.loads(path.read_text()).get("annotations", []))
        for path in (tmp_path / "coco-test-groundtruth" / "annotations").glob("*.json")
    )
    assert written + hidden == boxes_before
    assert sum(manifest["counts"]["boxes"].values()) == written


def test_a_jobs_progress_is_seen_by_others_while_the_export_reads_its_snapshot(labelled):
    job = ExportJob.objects.create(
        dataset=labelled["dataset"], format="coco", split="all", include_images=False, state=JobState.RUNNING
    )
    seen = []
    # Entered as export_job_run enters them: the progress first, then the export's snapshot.
    with services._job_progress(job.pk) as progress, selectors.snapshot() as taken:
        assert taken
        progress(17)
        in_another_connection(
            lambda: seen.append(ExportJob.objects.values_list("progress", flat=True).get(pk=job.pk))
        )
        with pytest.raises(Exception, match="read-only transaction"):
            with transaction.atomic():
                ExportJob.objects.filter(pk=job.pk).update(progress=18)
    assert seen == [17]
    job.refresh_from_db()
    assert job.progress == 17
