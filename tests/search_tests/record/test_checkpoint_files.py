"""search.record._checkpoint_files.unreadable: a checkpoint folder whose files are cut short,
empty or missing is named with the file and the reason (a relaunch then resumes from the one
before, or treats the trial as one without a checkpoint); a whole one, as a real trial writes
it, reads."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from search.record._checkpoint_files import resumable, resume_checkpoint, unreadable
from search.record._schema import RayKey, TrialAttr
from search.trial import STATE_NAME


def _checkpoint(folder: Path) -> Path:
    """A checkpoint as ``run_trial`` and the trainable write it: the state (``torch.save``)
    and the learning-curve point."""
    folder.mkdir()
    state = {"format": "npas-trial-state/1", "epoch": 2, "fit": {"w": torch.arange(500.0)}}
    torch.save(state, folder / STATE_NAME)
    (folder / RayKey.POINT_FILE).write_text(json.dumps({"epoch": 2, "accuracy": 0.5}))
    return folder


def test_a_whole_checkpoint_reads(tmp_path: Path) -> None:
    assert unreadable(_checkpoint(tmp_path / "checkpoint_000002")) is None


@pytest.mark.parametrize(
    ("name", "keep", "reason"),
    [
        (RayKey.POINT_FILE, 13, "cut short or damaged (JSONDecodeError"),
        (STATE_NAME, 300, "cut short or damaged (BadZipFile"),
        (STATE_NAME, 0, "the file is empty"),
    ],
    ids=["point cut at char 13", "state cut at 300 bytes", "state emptied"],
)
def test_a_file_cut_short_is_named_with_the_reason(
    tmp_path: Path, name: str, keep: int, reason: str
) -> None:
    folder = _checkpoint(tmp_path / "checkpoint_000002")
    path = folder / name
    path.write_bytes(path.read_bytes()[:keep])
    assert unreadable(folder).startswith(f"{path}: {reason}")


def test_a_state_whose_bytes_changed_fails_its_crc(tmp_path: Path) -> None:
    folder = _checkpoint(tmp_path / "checkpoint_000002")
    path = folder / STATE_NAME
    data = bytearray(path.read_bytes())
    at = data.index(torch.arange(500.0).numpy().tobytes()[400:408])  # inside the tensor
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    assert "fails its CRC" in unreadable(folder)


def test_a_checkpoint_without_its_state_is_unreadable(tmp_path: Path) -> None:
    folder = _checkpoint(tmp_path / "checkpoint_000002")
    (folder / STATE_NAME).unlink()
    assert "but no trial state" in unreadable(folder)


def test_an_empty_checkpoint_folder_is_unreadable(tmp_path: Path) -> None:
    """A worker killed between making the folder and copying its files into it."""
    folder = tmp_path / "checkpoint_000002"
    folder.mkdir()
    assert unreadable(folder) == f"{folder} is empty: no trial state"


def test_a_state_in_a_subfolder_is_read_and_counts(tmp_path: Path) -> None:
    """A trial function may keep its state in a folder of its own: it is checked, and it is
    the state the point alone is not."""
    folder = _checkpoint(tmp_path / "checkpoint_000002")
    (folder / STATE_NAME).rename(tmp_path / STATE_NAME)
    (folder / "mine").mkdir()
    (folder / "mine" / "state.json").write_text('{"epoch": 2')
    assert unreadable(folder).startswith(f"{folder / 'mine' / 'state.json'}: cut short")
    (folder / "mine" / "state.json").write_text('{"epoch": 2}')
    assert unreadable(folder) is None


def test_a_relaunch_resumes_from_the_latest_checkpoint_that_reads(tmp_path: Path) -> None:
    """The one before a cut-short latest (a worker killed copying it); None when none reads."""
    trial = SimpleNamespace(user_attrs={TrialAttr.RAY_TRIAL: str(tmp_path)})
    assert resume_checkpoint(trial) is None and not resumable(trial)
    first = _checkpoint(tmp_path / "checkpoint_000001")
    second = _checkpoint(tmp_path / "checkpoint_000002")
    assert resume_checkpoint(trial) == second
    (second / STATE_NAME).write_bytes(b"")
    assert resume_checkpoint(trial) == first and resumable(trial)
    (first / RayKey.POINT_FILE).write_text("{")
    assert resume_checkpoint(trial) is None and not resumable(trial)
