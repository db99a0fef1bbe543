"""`evalsite cache info|stats|clear`: the shared response cache."""

from __future__ import annotations

from django.core.management.base import CommandParser
from django.db.models import Count, Sum
from django.db.models.functions import Length

from evalsite.management import EvalsiteCommand
from runs.models import CachedResponse


class Command(EvalsiteCommand):
    help = "Show (info, or stats) or clear the response cache shared by every run and worker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["info", "stats", "clear"])
        parser.add_argument("--model", help="clear: only this model's responses.")
        parser.add_argument(
            "--yes", action="store_true", help="clear: delete them (without it, only count)."
        )

    def handle(self, *args, action: str, model: str | None, yes: bool, **options):
        entries = CachedResponse.objects.all()
        if model:
            entries = entries.filter(model=model)
        if action == "clear":
            if not yes:  # evalblink's habit: a clear without --yes counts, deletes nothing
                self.stdout.write(
                    f"{entries.count()} cached responses would be cleared; nothing was "
                    "deleted: pass --yes to clear them"
                )
                return
            count, _ = entries.delete()
            self.stdout.write(f"cleared {count} cached responses")
            return
        total = entries.aggregate(n=Count("pk"), chars=Sum(Length("text")))
        self.stdout.write(
            f"{total['n']} cached responses, {total['chars'] or 0:,} characters of text"
        )
        by_model = entries.values("provider", "model").annotate(n=Count("pk")).order_by("-n")
        for row in by_model:
            self.stdout.write(f"  {row['provider']:<12} {row['model']:<44} {row['n']:>7}")
