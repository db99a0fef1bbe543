from django.apps import AppConfig


class LabelsConfig(AppConfig):
    name = "labels"
    verbose_name = "Labels and agreement"

    def ready(self) -> None:
        # The runs app builds reports without importing this one (labels depends on runs,
        # never the reverse): the run's calibration asks its registered label sources.
        from labels.calibration import suite_labels
        from runs.reporting import LABEL_SOURCES

        if suite_labels not in LABEL_SOURCES:
            LABEL_SOURCES.append(suite_labels)
