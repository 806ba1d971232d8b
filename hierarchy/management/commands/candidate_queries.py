"""`candidate_queries`: the search queries that collect a concept's candidate images (hierarchy/queries.py), or
the scene and pairwise queries of a detection class set; printed as text, CSV or JSON."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from config import csvfile
from hierarchy.models import Concept, Hierarchy
from hierarchy.queries import Query, pairwise_queries, scene_queries, translation_table
from hierarchy.selectors import concept_terms, queries_for_concept


class Command(BaseCommand):
    help = (
        "Print the search queries for a concept: its synonyms, each with the ancestor words its gloss uses "
        "(ImageNet: 'whippet' -> 'whippet dog', 'whippet greyhound'), and its translations when --translations "
        "names a table. With --hierarchy, print the scene and pairwise queries of that detection class set "
        "instead. Run them against your own search service, then import the result with import_candidates."
    )

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--concept", metavar="WNID", action="append", help="A concept (repeatable).")
        target.add_argument(
            "--hierarchy", metavar="NAME", help="A loaded hierarchy whose leaves are the detection classes."
        )
        parser.add_argument(
            "--translations",
            metavar="FILE.tsv",
            help="Translation table: wnid<TAB>language<TAB>term lines (several terms per language allowed).",
        )
        parser.add_argument(
            "--scenes", metavar="FILE", help="With --hierarchy: scene names, one a line (default: built in)."
        )
        parser.add_argument(
            "--pairs-limit", type=int, default=None, help="With --hierarchy: at most N pairs."
        )
        parser.add_argument("--format", choices=("text", "csv", "json"), default="text")

    def handle(self, *args, **opts):
        if opts["hierarchy"]:
            queries = self._detection(opts)
        else:
            table = self._translations(opts["translations"])
            queries = []
            for wnid in opts["concept"]:
                concept = Concept.objects.filter(wnid=wnid).first()
                if concept is None:
                    raise CommandError(f"no concept {wnid!r}; load a hierarchy that has it first")
                queries.extend(queries_for_concept(concept, table.get(wnid)))
        self._print(queries, opts["format"])

    def _translations(self, path: str | None) -> dict:
        if not path:
            return {}
        try:
            with open(path, encoding="utf-8") as handle:
                return translation_table(handle)
        except OSError as exc:
            raise CommandError(f"cannot read translation table {path}: {exc.strerror}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise CommandError(f"translation table {path}: {exc}") from None

    def _detection(self, opts) -> list[Query]:
        hierarchy = Hierarchy.objects.filter(name=opts["hierarchy"]).order_by("-id").first()
        if hierarchy is None:
            raise CommandError(f"no hierarchy named {opts['hierarchy']!r}")
        if opts["pairs_limit"] is not None and opts["pairs_limit"] < 0:
            raise CommandError("--pairs-limit must be 0 or more")
        leaves = list(hierarchy.nodes.filter(leaf=True).select_related("concept").prefetch_related("parents"))
        classes = [concept_terms(node.concept) for node in leaves]
        parents = {node.concept.wnid: [p.node_id for p in node.parents.all()] for node in leaves}
        scenes = None
        if opts["scenes"]:
            try:
                with open(opts["scenes"], encoding="utf-8") as handle:
                    scenes = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read scene list {opts['scenes']}: {exc}") from None
        found = scene_queries(scenes) if scenes is not None else scene_queries()
        return found + pairwise_queries(classes, parents, limit=opts["pairs_limit"])

    def _print(self, queries: list[Query], fmt: str) -> None:
        rows = [q.as_dict() for q in queries]
        if fmt == "json":
            self.stdout.write(json.dumps(rows, ensure_ascii=False, indent=1))
        elif fmt == "csv":
            writer = csvfile.DictWriter(self.stdout, fieldnames=["wnid", "query", "kind", "language"])
            writer.writeheader()
            writer.writerows(rows)
        else:
            for row in rows:
                lang = f" [{row['language']}]" if row["language"] != "en" else ""
                self.stdout.write(f"{row['wnid']}\t{row['kind']}\t{row['query']}{lang}")
