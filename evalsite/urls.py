from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import path
from django.views.generic.base import RedirectView

from runs import views

admin.site.site_header = "evalsite console"
admin.site.site_title = "evalsite console"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("suites/", views.suite_list, name="suite_list"),
    path("suites/new/", views.suite_new, name="suite_new"),
    path("suites/register-file/", views.suite_register_file, name="suite_register_file"),
    path("suites/<slug:name>/", views.suite_detail, name="suite_detail"),
    path("prices/", views.prices, name="prices"),
    path("admin/", admin.site.urls),
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    ),
]
