"""The labelling app's URLs: the labelling queue under ``/label/`` and a suite's calibration
and labels beside its page, included at the site's root."""

from django.urls import path

from labels import views

urlpatterns = [
    path("label/", views.label_home, name="label_home"),
    path("label/<slug:name>/", views.label_pair, name="label_pair"),
    path("label/<slug:name>/mine/", views.my_labels, name="my_labels"),
    path("suites/<slug:name>/calibration/", views.calibration_page, name="calibration_page"),
    path("suites/<slug:name>/labels.yaml", views.labels_export, name="labels_export"),
    path("suites/<slug:name>/to-lab/", views.calibration_to_lab, name="calibration_to_lab"),
    path("suites/<slug:name>/labels/import/", views.labels_import, name="labels_import"),
]
