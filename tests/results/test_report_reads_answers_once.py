"""Writing a run's report reads its answers once: the report's rows and answers.jsonl's lines
come from the same read."""

from __future__ import annotations

import contextlib
import json
import re
from unittest import mock

from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext

from runs.models import Answer, Run
from runs.results.media import report_attachments
from runs.results.reporting import _answer_rows, write_report
from tests.helpers.factories import make_pair, make_run


def _answer_reads(queries: CaptureQueriesContext) -> list[str]:
    """The statements that read the answers' values (their error messages among them): a
    SELECT, or on PostgreSQL the server-side cursor `.iterator()` declares for one."""
    table = connection.ops.quote_name(Answer._meta.db_table)
    return [
        q["sql"]
        for q in queries.captured_queries
        if (q["sql"].startswith("SELECT") or re.match(r"DECLARE .* FOR SELECT ", q["sql"]))
        and f"{table}.{connection.ops.quote_name('error_message')}" in q["sql"]
    ]


class ReportReadTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.subject = make_run(status=Run.Status.DONE)
        make_pair(cls.subject, "greet", "one", sides=("candidate", "candidate"))
        make_pair(cls.subject, "greet", "two", sides=("baseline", "candidate"))

    def test_answers_jsonl_is_written_from_the_rows_the_report_read(self):
        with CaptureQueriesContext(connection) as queries:
            report = write_report(self.subject)
        assert len(_answer_reads(queries)) == 1
        lines = (self.subject.report_dir / "answers.jsonl").read_text().splitlines()
        assert len(lines) == Answer.objects.filter(run=self.subject).count() == 4
        first = json.loads(lines[0])
        assert list(first)[-1] == "scorecard" and "text" in first
        assert report["totals"]["answers"] == 4

    def test_each_answers_scorecard_is_worked_out_once(self):
        """answers.jsonl, the scorecard table and the paired units share one scorecard an
        answer (a 100,000-answer report worked each out three times)."""
        import evalsite.core.report.build as build
        import evalsite.core.report.pairing as pairing
        import evalsite.core.scoring.scorecard as scorecard
        import runs.results.reporting as reporting

        scored, score = [], scorecard.score_answer

        def counted(criteria, answer):
            scored.append((answer.task, answer.case, answer.contestant, answer.repeat))
            return score(criteria, answer)

        with contextlib.ExitStack() as stack:
            for module in (build, pairing, reporting, scorecard):
                stack.enter_context(mock.patch.object(module, "score_answer", counted, create=True))
            write_report(self.subject)
        assert len(scored) == len(set(scored)) == 4

    def test_a_suite_that_attaches_no_file_lists_none_without_reading_the_answers(self):
        run = Run.objects.get(pk=self.subject.pk)
        run.suite_version.core_suite()  # read before: only the attachments' own reads count
        with CaptureQueriesContext(connection) as queries:
            assert report_attachments(run) == []
        assert queries.captured_queries == []

    def test_the_rows_share_the_texts_many_answers_have(self):
        """The database gives each row its own copy of a case id, a contestant, a verdict;
        a report of 100,000 answers kept about 25 MB of copies."""
        rows = list(_answer_rows(self.subject, self.subject.suite_version.core_suite()))
        by_case = {}
        for answer in rows:
            assert by_case.setdefault(answer.case, answer.case) is answer.case
        assert len({id(answer.contestant) for answer in rows}) == 2
        assert len({id(answer.status) for answer in rows}) == 1
