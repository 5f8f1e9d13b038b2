"""search._output: a destination checked before the work (a real read-only tmpfs, a real full
one, a file where a folder belongs) and files written whole or not at all on a disk that fills
up while they are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from search._output import check_file, check_folder, write_atomic
from search.errors import OutputError
from tests.search_tests.disks import full, read_only, tmpfs


def test_a_read_only_a_full_and_a_file_destination_are_refused(tmp_path: Path) -> None:
    with read_only(tmp_path / "ro") as ro, pytest.raises(OutputError, match="Read-only"):
        check_folder(ro / "out", flag="--out")
    with full(tmp_path / "full") as disk:
        with pytest.raises(OutputError, match="No space left on device"):
            check_folder(disk, flag="--out")
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # the probe is gone
    (tmp_path / "f").write_text("mine", encoding="utf-8")
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_folder(tmp_path / "f", flag="--out")
    with pytest.raises(OutputError, match="is a folder"):
        check_file(tmp_path, flag="--plot")
    assert check_folder(tmp_path / "new" / "deep", flag="--out").is_dir()


def test_a_write_that_fills_the_disk_leaves_the_old_file_and_no_temporary(tmp_path) -> None:
    with tmpfs(tmp_path / "disk", "256k") as disk:
        target = disk / "model.pt"
        target.write_bytes(b"old")
        with pytest.raises(OutputError, match="No space left on device"):
            write_atomic(target, lambda tmp: tmp.write_bytes(b"\1" * 1024 * 1024))
        assert target.read_bytes() == b"old"
        assert [p.name for p in disk.iterdir()] == ["model.pt"]
        write_atomic(target, lambda tmp: tmp.write_bytes(b"new"))
        assert target.read_bytes() == b"new" and [p.name for p in disk.iterdir()] == ["model.pt"]
