"""Rendering the stored report (report.json, SPEC §11): Markdown, one self-contained HTML
file with inline SVG charts, the CLI summary, and the comparison of two runs.

Every function here takes the report as a plain dict and treats every string in it as
untrusted; see :mod:`evalsite.core.report.text` for how each output keeps it inert.

Import from the module that holds what you need (``….html``, ``….markdown``,
``….compare``…): this package imports none of them, so a verb that prints from stored
reports (`evalsite list`) loads neither the builder nor the statistics and numpy.
"""
