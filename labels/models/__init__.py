"""The labels app's models, one module per noun."""

from labels.models.label import Assignment
from labels.models.pairsets import PairSet, PairSetItem, PairSetJudgeRun

__all__ = ["Assignment", "PairSet", "PairSetItem", "PairSetJudgeRun"]
