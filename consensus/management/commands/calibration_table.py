"""`manage.py calibration_table`: print a concept's calibration table as a grid of P(positive | a yes, b no)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from consensus import estimates
from consensus.calibration import ConfidenceTable
from consensus.models import ConsensusSettings, QuestionKind
from consensus.stopping import ACCEPT, REJECT, decision_matrix
from hierarchy.models import Concept


class Command(BaseCommand):
    help = "Print the calibration table in use for a concept: rows are yes votes (a), columns no votes (b)."

    def add_arguments(self, parser):
        parser.add_argument("--concept", required=True, help="wnid of the concept.")
        parser.add_argument("--kind", choices=QuestionKind.values, default=QuestionKind.IMAGE_VERIFY)
        parser.add_argument("--cap", type=int, default=None, help="Show patterns up to this many votes.")

    def handle(self, *args, **opts):
        concept = Concept.objects.filter(wnid=opts["concept"]).first()
        if concept is None:
            raise CommandError(f"no concept with wnid {opts['concept']!r}")
        row = estimates.table_newest(opts["kind"], concept.pk)
        if row is None:
            raise CommandError(f"no {opts['kind']} calibration table for {concept.wnid} yet")
        table = ConfidenceTable.from_dict(row.table)
        cap = min(table.cap, opts["cap"] or table.cap)
        policy = estimates.policy_for(ConsensusSettings(), opts["kind"])
        marks = decision_matrix(table, policy) if policy.cap <= table.cap else None
        out = self.stdout
        out.write(
            f"{opts['kind']} table for {concept.wnid} ({concept.name}): {row.n_images} calibration images, "
            f"{row.n_votes} votes, built {row.created_at:%Y-%m-%d %H:%M:%S %Z}, {row.method}"
        )
        out.write(
            f"P(positive | a yes, b no); default thresholds: accept >= {policy.tau_accept}, "
            f"reject <= {policy.tau_reject} (+ accept, - reject)"
        )
        out.write("a\\b " + "".join(f"{b:>9}" for b in range(cap + 1)))
        for a in range(cap + 1):
            cells = []
            for b in range(cap + 1 - a):
                mark = ""
                if marks is not None and a + b <= policy.cap:
                    mark = "+" if marks[a, b] == ACCEPT else "-" if marks[a, b] == REJECT else ""
                cells.append(f"{table.p_positive(a, b):.4f}{mark}".rjust(9))
            out.write(f"{a:>3} " + "".join(cells))
