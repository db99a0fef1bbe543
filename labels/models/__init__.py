"""The labels app's models, one module per noun."""

from labels.models.label import Assignment, Label

__all__ = ["Assignment", "Label"]
