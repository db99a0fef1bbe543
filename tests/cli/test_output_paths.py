"""A path a command is told to write (issue 25 item 8): a new path or a regular file is
written whole; a symlink, FIFO, device or folder is refused in one line, exit 2, and left
as it was (run as root, `prices export /dev/full` replaced the device with a file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evalsite.core.exitcodes import ExitCode
from evalsite.core.output_files import OutputError, write_output
from runs.models import PriceTable
from tests.helpers.factories import make_suite_version, run_command


def _specials(tmp_path: Path) -> dict[str, Path]:
    """A symlink to a file, a FIFO, a folder and (as root) a character device."""
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    made = {"symlink": tmp_path / "link.yaml", "FIFO": tmp_path / "fifo.yaml",
            "folder": tmp_path / "folder.yaml"}  # fmt: skip
    made["symlink"].symlink_to(target)
    os.mkfifo(made["FIFO"])
    made["folder"].mkdir()
    if os.geteuid() == 0:
        made["device"] = tmp_path / "null.yaml"
        os.mknod(made["device"], stat.S_IFCHR | 0o600, os.makedev(1, 3))  # as /dev/null
    return made


def _kind(path: Path) -> int:
    return stat.S_IFMT(path.lstat().st_mode)


def test_write_output_writes_a_new_path_and_replaces_a_regular_file(tmp_path):
    path = tmp_path / "out.yaml"
    write_output(path, "one\n")
    write_output(path, "two\n")
    assert path.read_text() == "two\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.yaml"]  # no temp file left


def test_write_output_refuses_anything_but_a_regular_file_and_leaves_it(tmp_path):
    for kind, path in _specials(tmp_path).items():
        before = _kind(path)
        with pytest.raises(OutputError) as refused:
            write_output(path, "text\n")
        assert str(refused.value) == (
            f"{path}: is a {kind}, not a regular file: name a new file or a regular one"
        )
        assert _kind(path) == before
    assert (tmp_path / "target.txt").read_text() == "keep me\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_write_output_names_a_missing_folder(tmp_path):
    with pytest.raises(OutputError) as refused:
        write_output(tmp_path / "nowhere" / "out.yaml", "text\n")
    assert str(refused.value) == f"{tmp_path / 'nowhere' / 'out.yaml'}: cannot write: " \
        "No such file or directory"  # fmt: skip


@pytest.mark.django_db
def test_prices_export_refuses_a_device_a_fifo_a_symlink_and_a_folder(tmp_path):
    PriceTable.objects.ensure_default()
    for kind, path in _specials(tmp_path).items():
        before = _kind(path)
        code, out, err = run_command("prices", "export", str(path))
        assert (code, out) == (ExitCode.INPUT_ERROR, "")
        assert err == f"error: {path}: is a {kind}, not a regular file: name a new file or a " \
            "regular one\n"  # fmt: skip
        assert _kind(path) == before
    code, out, _ = run_command("prices", "export", str(tmp_path / "prices.yaml"))
    assert code == ExitCode.OK and (tmp_path / "prices.yaml").read_text().startswith("pinned")


@pytest.mark.django_db
def test_labels_export_out_refuses_a_fifo_and_a_symlink(tmp_path):
    make_suite_version()
    specials = _specials(tmp_path)
    for kind in ("FIFO", "symlink"):
        code, _, err = run_command("labels", "export", "tiny", "--out", str(specials[kind]))
        assert code == ExitCode.INPUT_ERROR
        assert f"{specials[kind]}: is a {kind}, not a regular file" in err
    assert (tmp_path / "target.txt").read_text() == "keep me\n"
    code, _, _ = run_command("labels", "export", "tiny", "--out", str(tmp_path / "l.yaml"))
    assert code == ExitCode.OK and (tmp_path / "l.yaml").is_file()


@pytest.mark.django_db
def test_init_refuses_to_write_its_files_over_a_symlink_or_a_fifo(tmp_path):
    PriceTable.objects.ensure_default()
    dangling = tmp_path / "a.yaml"
    dangling.symlink_to(tmp_path / "missing.txt")  # it wrote through (or failed with a traceback)
    os.mkfifo(tmp_path / "b.replies.yaml")
    for suite, refused, kind in [("a.yaml", "a.yaml", "symlink"),
                                 ("b.yaml", "b.replies.yaml", "FIFO")]:  # fmt: skip
        code, out, err = run_command("init", str(tmp_path / suite), "--yes")
        assert (code, out) == (ExitCode.INPUT_ERROR, "")
        assert err == f"error: {tmp_path / refused}: is a {kind}, not a regular file: name a " \
            "new file or a regular one\n"  # fmt: skip
    assert dangling.is_symlink() and not (tmp_path / "missing.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "b.replies.yaml"]
