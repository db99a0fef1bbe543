"""The labels app's models, one module per noun."""

from labels.models.label import Assignment

__all__ = ["Assignment"]
