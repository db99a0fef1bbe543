"""The judge lab's models: pair sets, their pairs and the lab runs that judged them."""

from lab.models.pairsets import PairSet, PairSetItem, PairSetJudgeRun

__all__ = ["PairSet", "PairSetItem", "PairSetJudgeRun"]
