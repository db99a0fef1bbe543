"""`evalsite compare A B --fail-on-regression POINTS --significance ALPHA` (issue 19): a
drop past the points fails only when its paired interval lies below 0."""

from __future__ import annotations

import pytest

from tests.helpers.factories import run_command
from tests.web.test_judge_figure_pages import _stored

pytestmark = pytest.mark.django_db


def test_a_significant_drop_fails_and_noise_past_the_points_passes():
    _stored("20261202T000000Z_a", 4), _stored("20261202T000000Z_b", 5, lean=-0.2)
    _stored("20261202T000000Z_c", 8), _stored("20261202T000000Z_d", 9)
    real = ("compare", "20261202T000000Z_a", "20261202T000000Z_b", "--fail-on-regression", "5")
    code, out, err = run_command(*real, "--significance", "0.05")
    assert code == 1 and "regression: fake/cand" in err
    assert "paired by case and repeat (95% paired bootstrap" in out
    noise = ("compare", "20261202T000000Z_c", "20261202T000000Z_d", "--fail-on-regression", "2")
    assert run_command(*noise)[0] == 1  # down 3.9 points: past 2
    code, out, _ = run_command(*noise, "--significance", "0.05")
    assert code == 0 and "fake/cand: win-rate -0.039 [" in out


def test_significance_needs_the_points_and_an_alpha_up_to_a_half():
    _stored("20261202T000000Z_a", 4)
    code, _, err = run_command("compare", "20261202T000000Z_a", "20261202T000000Z_a",
                           "--significance", "0.05")  # fmt: skip
    assert code == 2 and "beside --fail-on-regression" in err
