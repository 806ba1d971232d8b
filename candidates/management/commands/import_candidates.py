"""`import_candidates FILE.csv|FILE.jsonl|s3://bucket/prefix --dataset NAME`: import a candidate list, download
its images (in the background with a broker, here and now without one), and print progress and each failed row
with its reason."""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from candidates import services
from candidates.models import CandidateImport, ImportState


class Command(BaseCommand):
    help = (
        "Import candidate images for verification from a CSV (header: url,concept[,query,source]) or JSON "
        "Lines file of (url, concept, query, source) rows, or from every object under an s3://bucket/prefix "
        "(with --concept). Only http(s) URLs to public addresses are fetched (CROWDLABEL_CANDIDATE_ALLOWED_HOSTS "
        "lets named host:port endpoints through). Each refused row is reported with its reason and never stops "
        "the others; running the same import again fetches nothing twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", metavar="FILE|s3://bucket/prefix")
        parser.add_argument("--dataset", required=True, metavar="NAME")
        parser.add_argument(
            "--concept", metavar="WNID", help="For an s3:// source: the concept of every object."
        )
        parser.add_argument("--query", default="", help="For an s3:// source: the provenance query recorded.")
        parser.add_argument(
            "--wait", type=float, default=600.0, help="Seconds to wait for a background import to finish."
        )

    def handle(self, *args, **opts):
        dataset = Dataset.objects.filter(name=opts["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {opts['dataset']!r}")
        source = opts["source"]
        try:
            if source.startswith("s3://"):
                if not opts["concept"]:
                    raise CommandError("an s3:// source needs --concept WNID (objects carry no concept)")
                job = services.candidate_import_bucket(
                    dataset=dataset, url=source, concept=opts["concept"], query=opts["query"]
                )
            else:
                path = Path(source)
                try:
                    data = path.read_bytes()
                except OSError as exc:
                    raise CommandError(f"cannot read {source}: {exc.strerror}") from None
                job = services.candidate_import_create(dataset=dataset, name=path.name, data=data)
        except services.ImportRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"import {job.pk}: {job.total} rows from {job.source_name} into {dataset.name}")
        job = self._wait(job, opts["wait"])
        progress = services.import_progress(job, failures=10_000)
        for failure in progress["failures"]:
            self.stdout.write(
                f"  line {failure['line']}: {failure['url'] or '(no url)'}: {failure['reason']}"
            )
        self.stdout.write(
            f"import {job.pk} {job.state}: {job.stored} stored, {job.duplicates} duplicates of images already "
            f"in the dataset, {job.skipped} skipped (fetched before), {job.failed} failed, of {job.total}"
        )

    def _wait(self, job: CandidateImport, seconds: float) -> CandidateImport:
        deadline = time.monotonic() + seconds
        last = -1
        while True:
            job.refresh_from_db()
            if job.state == ImportState.DONE or time.monotonic() > deadline:
                if job.state != ImportState.DONE:
                    self.stdout.write(
                        f"still running in the background: {job.done_rows}/{job.total} rows done"
                    )
                return job
            if job.done_rows != last:
                last = job.done_rows
                self.stdout.write(f"  {job.done_rows}/{job.total} rows done", ending="\r")
            time.sleep(0.5)
