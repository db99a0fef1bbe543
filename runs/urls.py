"""The runs app's URLs: suites, runs, their pages and files, decisions and prices, included at
the site's root."""

from django.urls import path

from runs.views import answers, decisions, naming, pairs, run_pages, suites

urlpatterns = [
    path("suites/", suites.suite_list, name="suite_list"),
    path("suites/new/", suites.suite_new, name="suite_new"),
    path("suites/register-file/", suites.suite_register_file, name="suite_register_file"),
    path("suites/<slug:name>/", suites.suite_detail, name="suite_detail"),
    path("suites/<slug:name>/<str:sha>/estimate/", suites.run_estimate, name="run_estimate"),
    path("suites/<slug:name>/<str:sha>/runs/", suites.run_new, name="run_new"),
    path("runs/<str:run_id>/", run_pages.run_detail, name="run_detail"),
    path("runs/<str:run_id>/cancel/", run_pages.run_cancel, name="run_cancel"),
    path("runs/<str:run_id>/pin/", run_pages.run_pin, name="run_pin"),
    path("runs/<str:run_id>/files/<str:name>", run_pages.run_file, name="run_file"),
    path("runs/<str:run_id>/media/<str:sha256>", run_pages.run_media, name="run_media"),
    path("runs/<str:run_id>/label/", naming.run_rename, name="run_rename"),
    path("runs/<str:run_id>/answers/", answers.answer_list, name="answer_list"),
    path("runs/<str:run_id>/answers.csv", answers.answer_csv, name="answer_csv"),
    path("runs/<str:run_id>/pairs/", pairs.pair_list, name="pair_list"),
    path("runs/<str:run_id>/pairs/<int:pair_id>/", pairs.pair_detail, name="pair_detail"),
    path("runs/<str:run_id>/decisions/", decisions.decision_new, name="decision_new"),
    path("compare/", run_pages.compare, name="compare"),
    path("decisions/", decisions.decision_list, name="decision_list"),
    path("decisions/DECISIONS.md", decisions.decisions_markdown, name="decisions_markdown"),
    path("prices/", suites.prices, name="prices"),
]
