"""How numbers and untrusted text print, and that the report package keeps Django out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evalsite.core.report import numbers as num
from evalsite.core.report.text import esc, md_code, visible


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.0658, "$0.0658"), (0.0081, "$0.008100"), (0.000081, "$0.000081"), (0.0, "$0.0000"),
     (12.5, "$12.5000"), (-0.0042, "-$0.004200"), (None, "n/a")],
)  # fmt: skip
def test_money_has_four_decimals_or_six_below_a_cent(value, expected):
    assert num.money(value) == expected


def test_rates_kappa_and_intervals():
    assert (num.rate(0.4625), num.rate(None), num.signed_rate(-0.25)) == ("0.463", "n/a", "-0.250")
    assert num.rate_n(0.95, 40) == "0.950 (n=40)"
    assert num.kappa(0.25, "fair") == "0.25 (fair)"
    assert num.kappa(-0.1, "<b>") == "-0.10"  # an unknown band is left out
    assert num.kappa(None, "fair") == "undefined"
    assert num.interval([0.325, 0.6125]) == "[0.325, 0.613]"
    assert num.interval([0.02, 0.48], 2) == "[0.02, 0.48]"
    assert num.interval(None) is None and num.interval([0.1]) is None


def test_visible_shows_what_would_hide_or_reorder_text():
    assert visible("a\nb\tc") == "a b c"
    assert visible("\x1b[31m") == "\\x1b[31m"
    assert visible("ab\u202ec\u200bd") == "ab\\u202ec\\u200bd"
    assert visible("\ud800") == "\\ud800"
    assert visible("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert visible("x" * 10, limit=5) == "xxxx\u2026"
    assert visible(None) == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [("gpt-4o", "`gpt-4o`"), ("a`b", "``a`b``"), ("`x", "`` `x ``"), ("a``b`", "``` a``b` ```"),
     ("<script>", "`\uff1cscript\uff1e`"), ("a|b", "`a\u2502b`"), ("", '""')],
)  # fmt: skip
def test_md_code_is_a_code_span_that_nothing_can_close_early(text, expected):
    assert md_code(text) == expected


def test_esc_leaves_no_tag_quote_or_url_scheme():
    assert esc('"><a href=javascript:x>') == "&quot;&gt;&lt;a href=javascript&#58;x&gt;"
    assert esc("it's") == "it&#x27;s"


def test_importing_the_report_package_imports_no_django():
    root = Path(__file__).resolve().parents[3]
    probe = (
        "import sys, evalsite.core.report, evalsite.core.report.compare;"
        "sys.exit(any(m == 'django' or m.startswith('django.') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
