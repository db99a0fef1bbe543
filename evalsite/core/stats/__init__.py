"""The statistics of a report as pure functions over plain values (SPEC §8, §9).

numpy and the standard library only; the tests check the figures against established
implementations (scikit-learn, statsmodels, krippendorff) where one exists and by hand where
not. Results are frozen dataclasses whose ``to_dict()`` is plain JSON, with None where a
figure is undefined.

Import from the module that holds what you need (``….kappa``, ``….pairs``…): this package
imports none of them, so a reader of a figure that needs no numpy (``….multiple``,
``….gate``) does not load numpy.
"""
