"""A call that reports more than its reservation allowed stops the run at once (SPEC §19).

The reservation holds each call's worst case: every prompt byte a token and every output
token the call may report. A model behind an API is trusted to keep to ``max_tokens``;
scripted and fake replies are known ahead and a command's output is capped in bytes, so
theirs is exact or a true bound. When a call settles above its reservation anyway, the run
is aborted over budget in the same transaction: the calls already in flight settle (their
cost is recorded as reported) and nothing new is claimed, reserved or started. The spend
then passes the cap by at most what the calls in flight at that moment add beyond their
reservations.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from decimal import Decimal

import pytest
from django.db.models import Sum

from evalsite.core.plan import worst_case
from evalsite.core.pricing import PriceRow, Usage, call_cost
from evalsite.core.providers import ScriptedReplies
from evalsite.core.providers.base import ErrorKind, ProviderError, Request
from evalsite.core.providers.command import MAX_OUTPUT_BYTES, CommandProvider
from evalsite.core.providers.fake import FakeProvider
from evalsite.core.providers.scripted import ScriptedProvider
from runs.engine import runner
from runs.models import Answer, Endpoint, Run
from tests.helpers.engine import (
    TOKENS_IN,
    TOKENS_OUT,
    LocalServer,
    MockLLM,
    make_mock_prices,
    mock_run,
    plan_run,
    reply,
    suite_text,
    wait_until,
)
from tests.helpers.factories import make_price_table

CAP = Decimal("0.05")
RATE = ("1", "1")  # $1 per million tokens: an honest call costs well under a thousandth
OVER = 1_000_000  # output tokens an over-reporting call claims: $1.00 each at RATE
MODELS = ("mock/a", "mock/b")


class OverReporting(LocalServer):
    """An OpenAI-compatible server on 127.0.0.1: the first `honest` calls report their real
    usage, every later one `OVER` output tokens. With `hold`, each call waits until the
    test releases it, in the order the calls arrived."""

    def __init__(self, *, honest: int = 0, hold: bool = False, latency: float = 0.0):
        super().__init__(latency=latency)
        self.honest, self.hold = honest, hold
        self.released = 0
        self._released = threading.Condition()

    def answer(self, index: int, model: str, content: str) -> bytes:
        if self.hold:
            with self._released:
                self._released.wait_for(lambda: self.released > index, timeout=60)
        time.sleep(self.latency)
        tokens = TOKENS_OUT if index < self.honest else OVER
        return reply(f"answer to {content}", completion_tokens=tokens).content

    def release(self, calls: int = 1) -> None:
        with self._released:
            self.released += calls
            self._released.notify_all()

    def release_all(self) -> None:
        self.release(10**9)

    def __exit__(self, *exc_info) -> None:
        self.release_all()
        super().__exit__(*exc_info)


def capped_run(server: OverReporting, *, cases: int = 64) -> Run:
    """mock/a against mock/b on `server`, --concurrency 16 (per model: 32 calls in flight)."""
    Endpoint.objects.create(name="mock", base_url=server.url, key_env_var="")
    make_mock_prices(MODELS, RATE)
    text = suite_text(name="overrun", cases=cases, models=MODELS, timeout_s=30)
    return plan_run(text, concurrency=16, max_cost=CAP)


def row(model: str) -> PriceRow:
    return PriceRow(model, Decimal(RATE[0]), Decimal(RATE[1]))


class Shards:
    """`runner.execute` in threads, so the test can watch the run while it goes."""

    def __init__(self, run_id: str, shards: int = 1):
        self.errors: list[BaseException] = []
        self.threads = [
            threading.Thread(target=self._shard, args=(run_id, shards), daemon=True)
            for _ in range(shards)
        ]
        for thread in self.threads:
            thread.start()

    def _shard(self, run_id: str, shards: int) -> None:
        try:
            runner.execute(run_id, shards=shards)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.errors.append(error)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in self.threads), "a shard never finished"
        assert self.errors == []


def status(run: Run) -> str:
    return Run.objects.values_list("status", flat=True).get(pk=run.pk)


def assert_overrun_bound(run: Run) -> Decimal:
    """Spend past the cap is at most what the over-reporting calls (all in flight when the
    first of them settled) cost beyond their reservations; returns that overrun."""
    run.refresh_from_db()
    done = Answer.objects.filter(run=run, status=Answer.Status.DONE)
    assert run.reserved_usd == 0
    assert done.aggregate(total=Sum("cost_usd"))["total"] == run.spent_usd
    over = [a for a in done if a.output_tokens == OVER]
    excess = sum(a.cost_usd - worst_case(Request(**a.request), row(a.model)).cost_usd for a in over)
    overrun = run.spent_usd - run.cap_usd
    assert overrun <= excess
    return overrun


def assert_stopped_by_overrun(run: Run) -> None:
    assert run.status == Run.Status.ABORTED_OVER_BUDGET
    assert "reported 1000000 output tokens, more than the 50 it was allowed" in run.detail
    assert "No call is reserved after it" in run.detail
    assert not Answer.objects.filter(run=run, status=Answer.Status.CLAIMED).exists()
    assert run.report is not None  # the partial report of what it kept


# --- over-reporting providers ------------------------------------------------------------


ONE_OVER = call_cost(row("mock/a"), Usage(TOKENS_IN, OVER))  # $1.00001


@pytest.mark.django_db(transaction=True)
def test_every_call_over_reporting_at_concurrency_16_stops_the_run_after_the_first_ones():
    with OverReporting(latency=0.2) as server:
        run = capped_run(server)
        Shards(run.id).join()

    run.refresh_from_db()
    assert_stopped_by_overrun(run)
    # Each model's first call goes alone, so the 30 reserved behind the two were never
    # sent (before this guarantee they all were: $32.00 against a $0.05 cap).
    assert len(server.calls) == 2
    assert run.spent_usd == 2 * ONE_OVER
    assert Answer.objects.filter(run=run, status=Answer.Status.PENDING).count() == 126
    assert_overrun_bound(run)


@pytest.mark.django_db(transaction=True)
def test_the_worst_case_is_the_32_calls_in_flight_when_the_first_overrun_settles():
    with OverReporting(honest=2, hold=True) as server:
        run = capped_run(server)
        shards = Shards(run.id)
        try:
            wait_until(lambda: server.in_flight == 2)  # each model's first call, alone
            server.release(2)
            wait_until(lambda: server.in_flight == 32)  # 16 a model
            server.release()  # the first over-reporting call settles...
            wait_until(lambda: status(run) == Run.Status.ABORTED_OVER_BUDGET, timeout=10)
            time.sleep(1.0)  # ...and in four polls nothing new starts, though slots are free
            assert len(server.calls) == 34 and server.in_flight == 31
        finally:
            server.release_all()
            shards.join()

    run.refresh_from_db()
    assert_stopped_by_overrun(run)
    assert len(server.calls) == 34
    assert Answer.objects.filter(run=run, output_tokens=OVER).count() == 32
    overrun = assert_overrun_bound(run)
    assert 32 * ONE_OVER - CAP < overrun < 32 * ONE_OVER


@pytest.mark.django_db(transaction=True)
def test_two_shards_start_nothing_after_either_settles_an_overrun():
    with OverReporting(honest=4, hold=True) as server:
        run = capped_run(server)
        shards = Shards(run.id, shards=2)
        try:
            wait_until(lambda: server.in_flight == 4)  # each shard's first call of each model
            server.release(4)
            wait_until(lambda: server.in_flight == 32)  # 8 a model a shard: the limit split
            server.release()
            wait_until(lambda: status(run) == Run.Status.ABORTED_OVER_BUDGET, timeout=10)
            time.sleep(1.0)
            assert len(server.calls) == 36 and server.in_flight == 31
        finally:
            server.release_all()
            shards.join()

    run.refresh_from_db()
    assert_stopped_by_overrun(run)
    assert len(server.calls) == 36
    assert_overrun_bound(run)


@pytest.mark.django_db(transaction=True)
def test_a_call_over_its_reservation_stops_the_run_though_the_cap_is_far_off():
    run = mock_run(cases=6)  # cap $2.00; at the conftest's $0.001 a token a call may cost $0.07
    mock = MockLLM(lambda call: reply("ok", completion_tokens=100), latency=0.2)  # max 50

    runner.execute(run.id, transport=mock.transport)

    run.refresh_from_db()
    assert run.status == Run.Status.ABORTED_OVER_BUDGET
    assert "reported 100 output tokens, more than the 50 it was allowed" in run.detail
    assert "it cost $0.110000 against the $0.0" in run.detail
    assert mock.count() == 2  # each model's first call, alone; nothing after
    assert run.spent_usd == Decimal("0.22") and run.reserved_usd == 0


# --- providers whose output is known or bounded: reserved at what they can report ------


def command_run(tmp_path, monkeypatch, *, cap: Decimal) -> tuple[Run, object]:
    """command/long and command/wordy reply 20,000 characters (5,000 tokens) whatever
    max_tokens (5) says, priced at $10 per million tokens: $0.05 a call, $0.20 for the
    four cases of one, $0.40 for the run."""
    log = tmp_path / "calls.log"
    program = tmp_path / "long.py"
    program.write_text(
        "import sys\nsys.stdin.read()\n"
        f"open({str(log)!r}, 'a').write('call\\n')\nprint('word ' * 4000)\n"
    )
    models = ("command/long", "command/wordy")
    for model in models:
        variable = "EVALSITE_COMMAND_" + model.partition("/")[2].upper()
        monkeypatch.setenv(variable, f"{sys.executable} {program}")
    make_price_table(dict.fromkeys(models, ("10", "10")), active=True)
    text = suite_text(name="long", cases=4, models=models, max_tokens=5)
    return plan_run(text, max_cost=cap), log


@pytest.mark.django_db(transaction=True)
def test_a_command_is_reserved_at_its_output_limit_so_a_tiny_cap_starts_nothing(
    tmp_path, monkeypatch
):
    run, log = command_run(tmp_path, monkeypatch, cap=CAP)

    runner.execute(run.id)

    run.refresh_from_db()
    assert run.status == Run.Status.ABORTED_OVER_BUDGET
    assert "may cost up to $26.2" in run.detail
    assert "2621440 output tokens at most), more than the whole cap $0.0500" in run.detail
    assert run.spent_usd == 0 and run.reserved_usd == 0  # before: $0.40 against $0.05
    assert not log.exists()  # the program never ran


@pytest.mark.django_db(transaction=True)
def test_a_command_under_a_cap_that_holds_its_worst_case_runs_one_call_at_a_time(
    tmp_path, monkeypatch
):
    run, log = command_run(tmp_path, monkeypatch, cap=Decimal("30"))

    runner.execute(run.id)

    run.refresh_from_db()
    assert run.status == Run.Status.DONE
    assert log.read_text().count("call") == 8
    assert run.spent_usd == Answer.objects.aggregate(total=Sum("cost_usd"))["total"]
    assert Decimal("0.40") < run.spent_usd < Decimal("0.41") and run.reserved_usd == 0


# --- the bounds themselves (no database) --------------------------------------------------


def _request(**fields) -> Request:
    base = {"model": "x/y", "messages": ({"role": "user", "content": "Echo w1."},)}
    return Request(**(base | {"max_tokens": 5} | fields))


def test_a_command_reply_of_the_largest_size_is_counted_at_the_command_output_limit(tmp_path):
    program = tmp_path / "big.py"
    program.write_text(
        "import sys\nsys.stdin.read()\nn = int(sys.argv[1])\nsys.stdout.write('x' * n)\n"
    )
    request = _request(timeout_s=30)

    def reply_of(size: int):
        provider = CommandProvider("big", [sys.executable, str(program), str(size)], env={})
        return provider, asyncio.run(provider.complete(request))

    provider, largest = reply_of(MAX_OUTPUT_BYTES)
    assert largest.usage.output_tokens == provider.output_token_limit(request) == 2_621_440
    with pytest.raises(ProviderError) as refused:
        reply_of(MAX_OUTPUT_BYTES + 1)
    assert refused.value.kind is ErrorKind.MALFORMED


def test_scripted_and_fake_replies_are_reserved_at_exactly_what_they_report():
    replies = ScriptedReplies.parse(
        "m:\n  t/c: ['" + "word " * 4000 + "', {error: nope}]\n"
        '  judge/t/c: [\'{"reason": "r", "winner": "1"}\']\n',
        "replies.yaml",
    )
    scripted = ScriptedProvider(replies)
    fake = FakeProvider()
    schema = {"type": "object", "properties": {"items": {"type": "array"}}}
    requests = [
        _request(model="scripted/m", task_id="t", case_id="c"),
        _request(model="scripted/m", task_id="t", case_id="c", purpose="judge", order=1),
        _request(model="fake/small", task_id="t", case_id="c"),
        _request(model="fake/small", schema=schema, repeat=3),
        _request(model="fake/small", purpose="judge", order=2),
    ]
    for request in requests:
        provider = scripted if request.provider == "scripted" else fake
        completion = asyncio.run(provider.complete(request))
        assert provider.output_token_limit(request) == completion.usage.output_tokens
    assert scripted.output_token_limit(requests[0]) == 5000  # max_tokens is 5
    errored = _request(model="scripted/m", task_id="t", case_id="c", repeat=1)
    assert scripted.output_token_limit(errored) == 0


def test_the_worst_case_prices_the_input_at_the_dearer_of_the_fresh_and_cached_rate():
    dear_cache = PriceRow("x/y", Decimal("1"), Decimal("2"), cached_input_per_mtok=Decimal("3"))
    request = _request()
    worst = worst_case(request, dear_cache, output_tokens=7)
    assert (worst.output_tokens, worst.input_tokens) == (7, len("Echo w1.") + 8)
    assert worst.cost_usd == call_cost(dear_cache, Usage(0, 7, worst.input_tokens))
    assert worst_case(request, None).cost_usd == 0
