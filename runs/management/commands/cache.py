"""`evalsite cache info|clear`: the shared response cache."""

from __future__ import annotations

from django.core.management.base import CommandParser
from django.db.models import Count, Sum
from django.db.models.functions import Length

from evalsite.management import EvalsiteCommand
from runs.models import CachedResponse
from runs.setup import prepare_database


class Command(EvalsiteCommand):
    help = "Show or clear the response cache shared by every run, user and worker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["info", "clear"])
        parser.add_argument("--model", help="clear: only this model's responses.")

    def handle(self, *args, action: str, model: str | None, **options):
        prepare_database()
        entries = CachedResponse.objects.all()
        if model:
            entries = entries.filter(model=model)
        if action == "clear":
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
