"""The judge lab's URLs, included under ``/lab/``."""

from django.urls import path

from lab import views as views_lab

urlpatterns = [
    path("", views_lab.lab_list, name="lab_list"),
    path("<slug:name>/", views_lab.lab_detail, name="lab_detail"),
    path("<slug:name>/report.json", views_lab.lab_report_json, name="lab_report_json"),
]
