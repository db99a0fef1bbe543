from django.test import TestCase
from django.urls import reverse

from runs.models import PriceTable, Suite, SuiteVersion
from tests.helpers.factories import make_suite_version, make_user, small_suite_text

HTMX = {"HTTP_HX_REQUEST": "true"}


class LoginTests(TestCase):
    def test_every_page_but_login_requires_login(self):
        for name in ["dashboard", "suite_list", "suite_new", "prices"]:
            response = self.client.get(reverse(name))
            assert response.status_code == 302, name
            assert response["Location"].startswith(reverse("login"))
        assert self.client.get(reverse("login")).status_code == 200

    def test_the_login_page_logs_a_user_in(self):
        make_user(username="ada", password="correct horse battery")
        response = self.client.post(
            reverse("login"), {"username": "ada", "password": "correct horse battery"}
        )
        assert response.status_code == 302 and response["Location"] == reverse("dashboard")

    def test_pages_carry_a_csp_with_a_nonce_and_the_security_headers(self):
        response = self.client.get(reverse("login"))
        csp = response["Content-Security-Policy"]
        assert "script-src 'self' 'nonce-" in csp
        assert "img-src 'self' data:" in csp
        assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == "same-origin"
        page = response.content.decode()
        nonce = csp.split("'nonce-", 1)[1].split("'", 1)[0]
        assert f'nonce="{nonce}"' in page  # the htmx script carries the nonce


class PageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()
        cls.version = make_suite_version(small_suite_text("tiny"))

    def setUp(self):
        self.client.force_login(self.user)

    def test_dashboard_lists_suites_with_their_calibration_badge(self):
        page = self.client.get(reverse("dashboard")).content.decode()
        assert "tiny" in page and "no judged run yet" in page

    def test_suite_detail_shows_tasks_cases_and_versions(self):
        page = self.client.get(reverse("suite_detail", args=["tiny"])).content.decode()
        assert "greet" in page and "Grace" in page and self.version.short_hash in page

    def test_unknown_suite_is_a_404(self):
        assert self.client.get(reverse("suite_detail", args=["nope"])).status_code == 404

    def test_prices_page_is_read_only_and_filters_by_provider(self):
        page = self.client.get(reverse("prices")).content.decode()
        assert "fake/small" in page and "anthropic/" in page
        assert "<form" not in page.split("<main>", 1)[1].split("</main>")[0]
        page = self.client.get(reverse("prices"), {"provider": "google"}).content.decode()
        assert "<code>google/" in page and "<code>anthropic/" not in page


class SuiteUploadTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def test_the_form_renders_whole_without_htmx(self):
        response = self.client.get(reverse("suite_new"))
        assert response.status_code == 200 and "<html" in response.content.decode()

    def test_live_check_returns_only_the_problems_fragment_by_line(self):
        text = small_suite_text("tiny").replace(
            "    kind: rewrite", "    kind: rewrite\n    rubrik: x"
        )
        response = self.client.post(
            reverse("suite_new"), {"yaml_text": text, "intent": "check"}, **HTMX
        )
        page = response.content.decode()
        assert response.status_code == 200 and "<html" not in page
        assert 'id="suite-problems"' in page
        assert "line 8" in page and "tasks[0].rubrik" in page and "rubric" in page
        assert response["Vary"] and "HX-Request" in response["Vary"]
        assert not Suite.objects.exists()

    def test_live_check_of_a_good_suite_says_ok(self):
        response = self.client.post(
            reverse("suite_new"), {"yaml_text": small_suite_text("tiny"), "intent": "check"}, **HTMX
        )
        assert "ok: tiny - 1 tasks, 2 cases, 0 labels" in response.content.decode()

    def test_registering_a_pasted_suite_stores_it_and_reuses_identical_bytes(self):
        data = {"yaml_text": small_suite_text("pasted"), "intent": "register"}
        response = self.client.post(reverse("suite_new"), data)
        assert response.status_code == 302 and response["Location"] == "/suites/pasted/"
        self.client.post(reverse("suite_new"), data)
        assert SuiteVersion.objects.filter(suite__name="pasted").count() == 1
        assert SuiteVersion.objects.get().created_by == self.user

    def test_registering_a_bad_suite_without_js_shows_the_problems_and_stores_nothing(self):
        text = small_suite_text("bad").replace("{{who}}", "{{whom}}")
        response = self.client.post(reverse("suite_new"), {"yaml_text": text, "intent": "register"})
        page = response.content.decode()
        assert response.status_code == 200 and "<html" in page
        assert "whom" in page and not Suite.objects.exists()

    def test_an_uploaded_file_is_validated_as_an_upload(self):
        from django.core.files.uploadedfile import SimpleUploadedFile

        text = small_suite_text("up").replace(
            "kind: rewrite", "kind: rewrite\n    schema_path: s.json"
        )
        upload = SimpleUploadedFile("up.yaml", text.encode())
        response = self.client.post(reverse("suite_new"), {"file": upload, "intent": "register"})
        page = response.content.decode()
        assert response.status_code == 200 and "schema_path" in page
        assert not Suite.objects.exists()

    def test_hostile_input_never_gives_a_500(self):
        bombs = [
            "a: &a [x,x,x,x,x,x,x,x,x]\n"
            + "".join(
                f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "[" * 10000,
            "suite: x\nsuite: y\n",
            "\x00",
            "tasks: [{id: a, id: b}]",
            '"\\ud800": 1',
        ]
        for text in bombs:
            response = self.client.post(
                reverse("suite_new"), {"yaml_text": text, "intent": "check"}, **HTMX
            )
            assert response.status_code == 200, text[:40]
            assert "problem" in response.content.decode()

    def test_a_suite_with_an_unknown_model_is_refused_with_a_suggestion(self):
        text = small_suite_text("tiny").replace("fake/large]", "fake/lage]")
        response = self.client.post(
            reverse("suite_new"), {"yaml_text": text, "intent": "check"}, **HTMX
        )
        assert "unknown model &#x27;fake/lage&#x27;" in response.content.decode()
        assert "did you mean &#x27;fake/large&#x27;" in response.content.decode()


class SuiteLimitsTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def test_a_paste_over_the_request_limit_gets_a_message_not_an_error_page(self):
        text = "a: " + "x" * (7 * 1024 * 1024)
        response = self.client.post(
            reverse("suite_new"), {"yaml_text": text, "intent": "check"}, **HTMX
        )
        assert response.status_code == 200
        assert "larger than 5,242,880 bytes" in response.content.decode()

    def test_a_50_mb_upload_is_refused_by_its_size(self):
        from django.core.files.uploadedfile import SimpleUploadedFile

        upload = SimpleUploadedFile("big.yaml", b"a: 1\n" * (10 * 1024 * 1024))
        response = self.client.post(reverse("suite_new"), {"file": upload, "intent": "register"})
        assert response.status_code == 200
        assert "the limit is 5,242,880" in response.content.decode()
        assert not Suite.objects.exists()

    def test_logging_out_returns_to_the_login_page(self):
        response = self.client.post(reverse("logout"))
        assert response.status_code == 302 and response["Location"] == reverse("login")
        assert self.client.get(reverse("dashboard")).status_code == 302
