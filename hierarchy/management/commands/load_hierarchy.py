"""`load_hierarchy FILE`: validate a hierarchy fixture and store it as question nodes, all or nothing."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from hierarchy.algorithm import DagError
from hierarchy.fixture import FixtureError, load_fixture
from hierarchy.services import ConceptConflict, HierarchyConflict, hierarchy_load


class Command(BaseCommand):
    help = (
        "Load a question hierarchy (crowdlabel-hierarchy/1 JSON, see docs/hierarchy.md). The file is refused, "
        "with every offending entry named, on cycles, unknown parents, duplicate ids, or leaves without a path "
        "to a root; nothing is stored then. Loading the same name and version twice is a no-op. A file that would "
        "change the gloss or add a parent of a concept a dataset uses is refused, naming both values and the "
        "datasets (concepts are shared by every dataset)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "file", metavar="FILE", help="Hierarchy fixture, e.g. fixtures/hierarchies/voc20.json"
        )

    def handle(self, *args, **opts):
        try:
            result = hierarchy_load(load_fixture(opts["file"]))
        except FixtureError as exc:
            raise CommandError(str(exc)) from None
        except (DagError, HierarchyConflict) as exc:
            raise CommandError(f"{opts['file']}: {exc}") from None
        except ConceptConflict as exc:
            lines = "\n".join(f"  {error}" for error in exc.describe())  # the operator sees every dataset
            raise CommandError(
                f"{opts['file']}: refused, it would rewrite concepts datasets use (nothing stored):\n{lines}"
            ) from None
        h = result.hierarchy
        verb = "loaded" if result.created else "already loaded (same DAG)"
        self.stdout.write(
            f"{verb}: hierarchy {h.pk} {h.name!r} version {h.version} "
            f"({result.nodes} questions, {result.leaves} leaves, fingerprint {h.fingerprint})"
        )
