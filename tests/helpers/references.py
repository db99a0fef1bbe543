"""The reference libraries the tests check evalsite against, imported when first used.

Every pytest-xdist worker collects every test module, so a library a test module imports at
its top is imported by each worker, whether or not that worker runs the module's tests.
scikit-learn, statsmodels, SciPy, krippendorff and the vendors' SDKs take about 4 s of a
worker's collection together (measured with ``python -m cProfile -m pytest --collect-only``;
docs in tests/README.md). Named here, each is imported by the first test that calls it.

    from tests.helpers.references import cohen_kappa_score, sm
    cohen_kappa_score(a, b)   # imports sklearn.metrics now, then calls it
    sm.OLS(y, x)              # imports statsmodels.api now
"""

from __future__ import annotations

import importlib
from typing import Any


class Deferred:
    """A module, or one name in a module, that is imported on its first use."""

    def __init__(self, module: str, name: str | None = None):
        self._module = module
        self._name = name

    def resolve(self) -> Any:
        target = importlib.import_module(self._module)
        return target if self._name is None else getattr(target, self._name)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(self.resolve(), attribute)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<deferred {self._module}{'.' + self._name if self._name else ''}>"


# scikit-learn
cohen_kappa_score = Deferred("sklearn.metrics", "cohen_kappa_score")

# statsmodels
sm = Deferred("statsmodels.api")
aggregate_raters = Deferred("statsmodels.stats.inter_rater", "aggregate_raters")
statsmodels_kappa = Deferred("statsmodels.stats.inter_rater", "cohens_kappa")
statsmodels_fleiss = Deferred("statsmodels.stats.inter_rater", "fleiss_kappa")
mcnemar = Deferred("statsmodels.stats.contingency_tables", "mcnemar")
multipletests = Deferred("statsmodels.stats.multitest", "multipletests")

# SciPy
permutation_test = Deferred("scipy.stats", "permutation_test")
student = Deferred("scipy.stats", "t")

# krippendorff
krippendorff = Deferred("krippendorff")
