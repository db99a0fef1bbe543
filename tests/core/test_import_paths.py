"""Every file an imported source refers to is read through one rule: inside the source's
folder, decided by name before anything is read. An absolute path, a '..' that leaves the
folder and a symbolic link inside it that points out are each a problem at the source's
line, which quotes no file's content and reads the same whether the outside file exists; a
source uploaded in the browser (no folder) refers to no file at all. No database.

``KINDS`` is every kind of reference of every format; tests/importers/test_import_paths.py runs the
same kinds through the command line and the add-suite page."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalsite.core.importers import translate
from evalsite.core.problems import SuiteError

SECRET = "TOP-SECRET-7f3a"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24 + SECRET.encode()
EVALING = "models: [{id: gpt-4o-mini, provider: openai}]\n"
PROMPTFOO = "providers: [openai:gpt-4o-mini]\n"


@dataclass(frozen=True)
class Kind:
    """One kind of reference: the source that makes it (``{ref}`` is the reference as
    written), the referenced file's extension and content (a valid file of that kind, so a
    reader that followed the reference would succeed and show it)."""

    name: str
    format: str
    source: str
    ext: str
    content: bytes

    @property
    def source_name(self) -> str:
        return "promptfooconfig.yaml" if self.format == "promptfoo" else "eval.yaml"


def _kind(name: str, format: str, source: str, ext: str, content: str | bytes) -> Kind:
    data = content if isinstance(content, bytes) else content.replace("S", SECRET).encode()
    head = PROMPTFOO if format == "promptfoo" else EVALING
    return Kind(name, format, head + source, ext, data)


KINDS = [
    _kind("pf-prompt-text", "promptfoo", 'prompts: ["Hi {{x}}", "file://{ref}"]\n', "txt", "S"),
    _kind(
        "pf-prompt-chat",
        "promptfoo",
        'prompts: ["file://{ref}"]\n',
        "json",
        '[{"role": "user", "content": "S"}]',
    ),
    _kind(
        "pf-tests-csv",
        "promptfoo",
        'prompts: ["Hi {{x}}"]\ntests: "file://{ref}"\n',
        "csv",
        "x\nS\n",
    ),
    _kind(
        "pf-tests-yaml",
        "promptfoo",
        'prompts: ["Hi {{x}}"]\ntests: ["file://{ref}"]\n',
        "yaml",
        "- vars: {x: S}\n",
    ),
    _kind(
        "pf-vars-file",
        "promptfoo",
        'prompts: ["Hi {{x}}"]\ntests: [{vars: "file://{ref}"}]\n',
        "yaml",
        "x: S\n",
    ),
    _kind(
        "pf-var-value",
        "promptfoo",
        'prompts: ["Hi {{x}}"]\ntests: [{vars: {x: "file://{ref}"}}]\n',
        "txt",
        "S",
    ),
    _kind(
        "pf-default-vars",
        "promptfoo",
        'prompts: ["Hi {{x}}"]\ndefaultTest: {vars: {x: "file://{ref}"}}\ntests: [{}]\n',
        "txt",
        "S",
    ),
    _kind("el-prompt", "evaling", "prompt: {ref}\ncases: [{id: a}]\n", "txt", "S"),
    _kind(
        "el-variant-prompt",
        "evaling",
        "variants: [{name: a, prompt: {ref}}]\ncases: [{id: a}]\n",
        "yaml",
        "- {role: user, content: S}\n",
    ),
    _kind(
        "el-rubric",
        "evaling",
        "prompt: Hi\ncases: [{id: a}]\n"
        "scorecard: [{criterion: q, scorer: {type: llm-judge, judge: j}}]\n"
        "judges: {j: {model: gpt-4o-mini, rubric: {ref}}}\n",
        "md",
        "S",
    ),
    _kind(
        "el-rubric-yaml",
        "evaling",
        "prompt: Hi\ncases: [{id: a}]\n"
        "scorecard: [{criterion: q, scorer: {type: llm-judge, judge: j}}]\n"
        "judges: {j: {model: gpt-4o-mini, rubric: {ref}}}\n",
        "yaml",
        "- {role: user, content: S}\n",
    ),
    _kind(
        "el-schema",
        "evaling",
        "prompt: Hi\ncases: [{id: a}]\n"
        "scorecard: [{criterion: f, scorer: {type: json-schema, schema: {ref}}}]\n",
        "json",
        '{"title": "S", "type": "object"}',
    ),
    _kind("el-cases-csv", "evaling", "prompt: Hi\ncases: {file: {ref}}\n", "csv", "id,x\na,S\n"),
    _kind(
        "el-cases-jsonl",
        "evaling",
        "prompt: Hi\ncases: {ref}\n",
        "jsonl",
        '{"id": "a", "vars": {"x": "S"}}\n',
    ),
    _kind("el-media", "evaling", "prompt: Hi\ncases: [{id: a, files: {img: {ref}}}]\n", "png", PNG),
    _kind(
        "el-media-var",
        "evaling",
        'prompt: Hi\ncases: [{id: a, vars: {img: "file://{ref}"}}]\n',
        "png",
        PNG,
    ),
]
ESCAPES = ["absolute", "dotdot", "link"]


def make_reference(tmp_path: Path, kind: Kind, escape: str, *, exists: bool = True) -> Path:
    """A source folder ``src`` whose source refers, by ``escape``, to a file of ``kind``
    in the folder ``outside`` beside it; the source's path."""
    outside, src = tmp_path / "outside", tmp_path / "src"
    outside.mkdir(parents=True, exist_ok=True)
    src.mkdir(exist_ok=True)
    target = outside / f"secret.{kind.ext}"
    if exists:
        target.write_bytes(kind.content)
    if escape == "absolute":
        written = str(target)
    elif escape == "dotdot":
        written = f"../outside/secret.{kind.ext}"
    else:
        (src / f"link.{kind.ext}").symlink_to(target)
        written = f"link.{kind.ext}"
    source = src / kind.source_name
    source.write_text(kind.source.replace("{ref}", written))
    return source


def _problems(format: str, source: Path, **options) -> list[str]:
    with pytest.raises(SuiteError) as caught:
        translate(format, source, **options)
    return [str(problem) for problem in caught.value.problems]


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_reference_leaving_the_source_folder_is_refused_at_its_line(tmp_path, kind, escape):
    source = make_reference(tmp_path, kind, escape)
    problems = _problems(kind.format, source)
    text = "\n".join(problems)
    assert SECRET not in text
    assert "must be a path relative to the source's folder" in text or (
        "must stay inside the source's folder" in text
    )
    assert all(problem.startswith(f"{source}:") for problem in problems), problems
    if escape != "absolute":  # the author wrote an absolute path; a link's target is not shown
        assert str(tmp_path / "outside") not in text


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("kind", KINDS[:1] + KINDS[7:8], ids=lambda kind: kind.name)
def test_a_refusal_reads_the_same_whether_the_outside_file_exists(tmp_path, kind, escape):
    there = _problems(kind.format, make_reference(tmp_path / "a", kind, escape))
    absent = _problems(kind.format, make_reference(tmp_path / "b", kind, escape, exists=False))
    assert [p.replace(str(tmp_path / "a"), "") for p in there] == [
        p.replace(str(tmp_path / "b"), "") for p in absent
    ]


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_reference_inside_the_folder_is_read_from_the_command_line(tmp_path, kind):
    src = tmp_path / "src"
    src.mkdir()
    (src / "sub").mkdir()
    (src / f"sub/file.{kind.ext}").write_bytes(kind.content)
    (src / kind.source_name).write_text(kind.source.replace("{ref}", f"sub/../sub/file.{kind.ext}"))
    translation = translate(kind.format, src / kind.source_name)
    rendered = b"".join(translation.rendered().values())
    assert SECRET.encode() in rendered  # read, and carried into the suite or its files


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_an_upload_refers_to_no_file_even_inside_its_folder(tmp_path, kind):
    src = tmp_path / "src"
    src.mkdir()
    (src / f"file.{kind.ext}").write_bytes(kind.content)
    (src / kind.source_name).write_text(kind.source.replace("{ref}", f"file.{kind.ext}"))
    problems = _problems(kind.format, src / kind.source_name, uploaded=True)
    assert SECRET not in "\n".join(problems)
    assert any(f"file.{kind.ext}: needs the CLI" in problem for problem in problems), problems


def test_every_refused_reference_is_listed_not_only_the_first(tmp_path):
    source = tmp_path / "eval.yaml"
    source.write_text(
        EVALING + "variants: [{name: a, prompt: /etc/hostname.txt}, {name: b, prompt: ../b.txt}]\n"
        "cases: {file: ../c.csv}\n"
    )
    problems = _problems("evaling", source)
    assert [problem.split(": ", 2)[1] for problem in problems] == [
        "variants[0].prompt",
        "variants[1].prompt",
        "cases.file",
    ]


def test_evalblink_and_evalpin_read_no_file_a_text_names(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET)
    blink = tmp_path / "bench.yaml"
    blink.write_text(
        "name: probe\nmodels: [openai/gpt-4o-mini]\n"
        f"prompts: [{{id: p, template: 'file://{tmp_path}/secret.txt'}}]\n"
        "test_cases: [{id: a, variables: {x: 'file://secret.txt'}}]\n"
    )
    pin = tmp_path / "suite.txt"
    pin.write_text(f"case a\nprompt: file://{tmp_path}/secret.txt\nexpect contains: x\n")
    for format, source in (("evalblink", blink), ("evalpin", pin)):
        translation = translate(format, source)
        rendered = b"".join(translation.rendered().values())
        assert SECRET.encode() not in rendered and b"secret.txt" in rendered


# --- CSV fields over the csv module's limit ---------------------------------------------------


@pytest.mark.parametrize(
    ("format", "name", "source"),
    [
        ("promptfoo", "promptfooconfig.yaml", PROMPTFOO + "prompts: [Hi]\ntests: file://t.csv\n"),
        ("evaling", "eval.yaml", EVALING + "prompt: Hi\ncases: {file: t.csv}\n"),
    ],
)
def test_a_csv_field_over_the_limit_is_a_problem_at_its_file_and_line(
    tmp_path, format, name, source
):
    limit = csv.field_size_limit()
    (tmp_path / "t.csv").write_text(f"id,x\na,short\nb,{'y' * (limit + 1)}\n")
    (tmp_path / name).write_text(source)
    assert _problems(format, tmp_path / name) == [
        f"{tmp_path / 't.csv'}:3: not valid CSV: a field is longer than {limit:,} characters, "
        "the most a CSV field may hold (write long texts in a YAML or JSONL file)"
    ]


def test_a_cases_jsonl_line_that_is_not_a_json_object_is_a_problem_at_its_line(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": "a"}\n{"id": \n[1]\n')
    (tmp_path / "eval.yaml").write_text(EVALING + "prompt: Hi\ncases: c.jsonl\n")
    problems = _problems("evaling", tmp_path / "eval.yaml")
    assert problems == [
        f"{tmp_path / 'c.jsonl'}:2: not valid JSON: Expecting value at column 8",
        f"{tmp_path / 'c.jsonl'}:3: a case must be a JSON object",
    ]


def test_a_promptfoo_reference_is_named_by_its_key_path(tmp_path):
    source = tmp_path / "promptfooconfig.yaml"
    source.write_text(
        PROMPTFOO + 'prompts: ["Hi {{x}}"]\n'
        'defaultTest: {vars: {y: "file://../y.txt"}}\n'
        'tests: [{vars: {x: "file:///x.txt"}}, "file://../t.yaml"]\n'
    )
    problems = _problems("promptfoo", source)
    assert [problem.split(": ", 3)[1:3] for problem in problems] == [
        ["tests[1]", "file://../t.yaml"],
        ["defaultTest.vars.y", "file://../y.txt"],
        ["tests[0].vars.x", "file:///x.txt"],
    ]
