"""The site's URLs: the dashboard, login, the admin, and each app's own (runs/urls.py,
labels/urls.py, lab/urls.py)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic.base import RedirectView

from evalsite.login import ThrottledLoginView
from evalsite.views import dashboard

admin.site.site_header = "evalsite console"
admin.site.site_title = "evalsite console"

urlpatterns = [
    path("", dashboard, name="dashboard"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("runs.urls")),
    path("", include("labels.urls")),
    path("lab/", include("lab.urls")),
    path("admin/", admin.site.urls),
    path(
        "favicon.ico",
        login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    ),
]
