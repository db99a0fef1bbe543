"""Inlining a suite's files copies only the containers it writes into: the result is what a
copy of the whole document gave, the document read is left as it was, and a suite with no
file is not copied at all (no database)."""

from __future__ import annotations

import copy
from pathlib import Path
from unittest import mock

import pytest

from evalsite.core import suite_files
from evalsite.core.problems import SourceMap
from evalsite.core.suite_files import attach_files
from evalsite.core.yamlsafe import load_yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["support-desk.yaml", "multimodal/multimodal.yaml"])
def test_the_inlined_document_is_the_same_and_the_one_read_is_untouched(name):
    path = EXAMPLES / name
    document = load_yaml(path.read_bytes(), filename=str(path)).data
    for task in document["tasks"]:  # a file named another way is written back as its path
        for case in task.get("cases", []):
            case.get("files", {}).update((k, f"./{v}") for k, v in case.get("files", {}).items())
    before = copy.deepcopy(document)
    sources = SourceMap(str(path), {})
    attached = attach_files(document, sources, base_dir=path.parent, origin="file")
    whole = attach_files(copy.deepcopy(document), sources, base_dir=path.parent, origin="file")
    assert document == before
    assert attached.document == whole.document != before
    assert (attached.files, attached.media, attached.problems) == (
        whole.files, whole.media, whole.problems,
    )  # fmt: skip


def test_a_suite_with_no_file_is_not_copied():
    cases = [{"id": f"c{n}", "vars": {"q": str(n)}} for n in range(2000)]
    document = {"suite": "s", "tasks": [{"id": "t", "prompt": "{{q}}", "cases": cases}]}
    with mock.patch.object(suite_files.copy, "deepcopy", wraps=copy.deepcopy) as deep:
        attached = attach_files(document, SourceMap("s.yaml", {}), base_dir=None, origin="file")
    assert deep.call_count == 0
    assert attached.document == document and attached.document["tasks"] is document["tasks"]
