from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView

from evalsite.login import ThrottledLoginView
from evalsite.views import dashboard
from labels import views as label_views
from runs.views import decisions, run_pages, suites

admin.site.site_header = "evalsite console"
admin.site.site_title = "evalsite console"

urlpatterns = [
    path("", dashboard, name="dashboard"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
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
    path("runs/<str:run_id>/answers/", run_pages.answer_list, name="answer_list"),
    path("runs/<str:run_id>/pairs/", run_pages.pair_list, name="pair_list"),
    path("runs/<str:run_id>/pairs/<int:pair_id>/", run_pages.pair_detail, name="pair_detail"),
    path("runs/<str:run_id>/decisions/", decisions.decision_new, name="decision_new"),
    path("compare/", run_pages.compare, name="compare"),
    path("decisions/", decisions.decision_list, name="decision_list"),
    path("decisions/DECISIONS.md", decisions.decisions_markdown, name="decisions_markdown"),
    path("label/", label_views.label_home, name="label_home"),
    path("label/<slug:name>/", label_views.label_pair, name="label_pair"),
    path("label/<slug:name>/mine/", label_views.my_labels, name="my_labels"),
    path("suites/<slug:name>/calibration/", label_views.calibration_page, name="calibration_page"),
    path("suites/<slug:name>/labels.yaml", label_views.labels_export, name="labels_export"),
    path("suites/<slug:name>/to-lab/", label_views.calibration_to_lab, name="calibration_to_lab"),
    path("suites/<slug:name>/labels/import/", label_views.labels_import, name="labels_import"),
    path("lab/", include("lab.urls")),
    path("prices/", suites.prices, name="prices"),
    path("admin/", admin.site.urls),
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    ),
]
