"""`manage.py calibration_repair`: find calibration tables built from too few calibration images (the old
batching built one from the first one to three hierarchy questions), rebuild them where enough calibration data
exists now, and serve or decide the questions that waited for a usable table."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Max

from consensus import creation, rebuild
from consensus.models import CalibrationTable, ConsensusSettings, QuestionDecision


class Command(BaseCommand):
    help = (
        "Rebuild (kind, concept) calibration tables whose newest measured table came from fewer than "
        "--min-images calibration images; report what could not be rebuilt yet and the decisions made with them."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--min-images",
            type=int,
            default=ConsensusSettings._meta.get_field("calibration_min").default,
            help="Smallest calibration batch a table may come from (default: the default calibration_min).",
        )
        parser.add_argument("--dry-run", action="store_true", help="Only report.")

    def handle(self, *args, **opts):
        minimum = opts["min_images"]
        if minimum < 1:
            raise CommandError("--min-images must be at least 1")
        newest = (
            CalibrationTable.objects.filter(n_images__gt=0)
            .values("kind", "concept_id")
            .annotate(last=Max("id"))
        )
        bad = list(
            CalibrationTable.objects.filter(pk__in=[row["last"] for row in newest], n_images__lt=minimum)
            .select_related("concept")
            .order_by("kind", "concept__wnid")
        )
        out = self.stdout
        out.write(f"{len(bad)} (kind, concept) table(s) built from fewer than {minimum} calibration images")
        for table in bad:
            used = dict(
                QuestionDecision.objects.filter(table__kind=table.kind, table__concept_id=table.concept_id)
                .filter(table__n_images__lt=minimum, table__n_images__gt=0)
                .values_list("decision")
                .annotate(n=Count("id"))
            )
            subjects = creation.calibration_subjects(kind=table.kind, concept_id=table.concept_id)["complete"]
            line = (
                f"{table.kind} {table.concept.wnid}: table of {table.n_images} image(s); "
                f"{len(subjects)} calibration image(s) complete now; decisions made with too small tables: "
                + (", ".join(f"{k} {v}" for k, v in sorted(used.items())) or "none")
            )
            if opts["dry_run"]:
                out.write(line)
                continue
            in_use = rebuild.calibration_rebuild(
                kind=table.kind, concept_id=table.concept_id, min_images=minimum
            )
            if in_use is not None and in_use.n_images >= minimum:
                out.write(f"{line} -> rebuilt from {in_use.n_images} images (table {in_use.pk})")
            else:
                out.write(
                    f"{line} -> not enough data yet: the small table is not used; new questions of the concept "
                    "are served as calibration questions until a table can be built"
                )
