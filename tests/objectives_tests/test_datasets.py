"""Datasets: loading, splits, normalisation, caching, downloads (local HTTP server), batching."""

from __future__ import annotations

import functools
import http.server
import io
import pickle
import shutil
import socket
import tarfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from objectives._download import Resource, fetch, md5_file
from objectives._idx import DatasetFormatError, parse_idx
from objectives.datasets import (
    DATASETS,
    Augment,
    DatasetUnavailableError,
    default_root,
    iterate,
    load,
)
from objectives.datasets import pad_crop as _pad_crop
from spaces._errors import ConfigError, UnknownNameError
from tests._support.data import MNIST, MNIST_FILES, needs_mnist


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoded caches and default roots go to a temp folder, never to the user's home."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("NPAS_DATA", raising=False)
    monkeypatch.delenv("NPAS_MIRROR", raising=False)


# ---------------------------------------------------------------- digits (bundled)


def test_registry_lists_the_datasets() -> None:
    assert DATASETS.names() == ["cifar10", "digits", "fashion-mnist", "mnist"]
    with pytest.raises(UnknownNameError, match="digits"):
        load("svhn")


def test_digits_shapes_dtypes_and_normalisation() -> None:
    data = load("digits")
    assert (len(data.train), len(data.val), len(data.test)) == (1149, 288, 360)
    assert data.in_shape == (1, 8, 8) and data.num_classes == 10
    assert data.train.x.shape == (1149, 1, 8, 8)
    assert data.train.x.dtype == torch.float32 and data.train.y.dtype == torch.int64
    assert data.train.x.mean().item() == pytest.approx(0.0, abs=1e-5)
    assert data.train.x.std().item() == pytest.approx(1.0, abs=1e-3)
    assert data.provenance["splits"] == {"train": 1149, "val": 288, "test": 360}
    assert "load_digits" in data.provenance["source"]
    assert not data.augment.enabled


def test_splits_deterministic_seeded_and_test_fixed() -> None:
    a, b, c = load("digits", seed=0), load("digits", seed=0), load("digits", seed=1)
    assert torch.equal(a.val.x, b.val.x) and torch.equal(a.train.y, b.train.y)
    assert not torch.equal(a.val.x, c.val.x)
    # The test split never depends on the seed; normalisation may, so compare labels + ranks.
    assert torch.equal(a.test.y, c.test.y)
    assert torch.equal(a.test.x.argsort(dim=0), c.test.x.argsort(dim=0))


@settings(max_examples=10, deadline=None)
@given(val_size=st.integers(10, 1000), seed=st.integers(0, 2**16))
def test_val_split_is_stratified(val_size: int, seed: int) -> None:
    data = load("digits", val_size=val_size, seed=seed)
    assert len(data.val) == val_size and len(data.train) == 1437 - val_size
    pool = torch.cat([data.train.y, data.val.y]).bincount(minlength=10).double()
    expected = pool / pool.sum() * val_size
    got = data.val.y.bincount(minlength=10).double()
    assert torch.all((got - expected).abs() <= 1.0 + 1e-9)


@pytest.mark.parametrize("bad", [0, 5, 1500, 0.0, 1.0, -0.1, True, "10%"])
def test_bad_val_size_named(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"val_size .*got"):
        load("digits", val_size=bad)  # type: ignore[arg-type]


def test_default_root_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_root() == tmp_path / "xdg" / "npas" / "data"
    monkeypatch.setenv("NPAS_DATA", str(tmp_path / "d"))
    assert default_root() == tmp_path / "d"


# ---------------------------------------------------------------- MNIST from the shared folder


@needs_mnist
def test_mnist_flat_layout_loads_and_caches_outside_the_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    before = sorted(p.name for p in MNIST.iterdir())
    monkeypatch.setenv("NPAS_DATA", str(MNIST))  # flat layout: files directly in the root
    data = load("mnist", download=False)
    assert (len(data.train), len(data.val), len(data.test)) == (55000, 5000, 10000)
    assert data.train.x.shape == (55000, 1, 28, 28) and data.test.x.dtype == torch.float32
    assert data.val.y.dtype == torch.int64 and set(data.test.y.unique().tolist()) == set(range(10))
    assert data.mean[0] == pytest.approx(0.1307, abs=2e-4)  # the well-known MNIST statistics
    assert data.std[0] == pytest.approx(0.3081, abs=2e-4)
    assert data.train.x.mean().item() == pytest.approx(0.0, abs=1e-4)
    assert data.augment == Augment(pad=2, flip=False)
    cache = Path(data.provenance["cache"])
    assert cache.is_file() and cache.is_relative_to(tmp_path)
    assert sorted(p.name for p in MNIST.iterdir()) == before  # nothing written beside the files
    again = load("mnist", root=MNIST, download=False)  # from the decoded cache
    assert torch.equal(again.test.x, data.test.x) and torch.equal(again.val.y, data.val.y)


@needs_mnist
def test_wrong_dataset_in_folder_fails_its_checksum() -> None:
    with pytest.raises(DatasetUnavailableError, match="md5 mismatch") as info:
        load("fashion-mnist", root=MNIST, download=False)
    assert sorted(info.value.missing) == MNIST_FILES


def test_missing_files_without_download_named(tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailableError, match=r"train-images-idx3-ubyte\.gz") as info:
        load("mnist", root=tmp_path, download=False)
    assert info.value.folder == tmp_path / "mnist"
    assert str(tmp_path / "mnist") in str(info.value)


# ---------------------------------------------------------------- downloads from a local server


@pytest.fixture
def serve() -> Iterator[Callable[[Path], str]]:
    """Starts HTTP servers on 127.0.0.1 for folders; yields a folder → base-URL function."""
    servers: list[http.server.ThreadingHTTPServer] = []

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    def start(folder: Path) -> str:
        handler = functools.partial(Quiet, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@needs_mnist
def test_download_from_mirror_verifies_and_loads(
    tmp_path: Path, serve: Callable[[Path], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    shutil.copytree(MNIST, site)
    dead, alive = _closed_port_url(), serve(site)
    monkeypatch.setenv("NPAS_MIRROR", f"{dead}, {alive}")  # the dead mirror is tried first
    root = tmp_path / "root"
    data = load("mnist", root=root, progress=False)
    assert sorted(p.name for p in (root / "mnist").iterdir()) == MNIST_FILES  # no temp files
    assert (len(data.train), len(data.val), len(data.test)) == (55000, 5000, 10000)
    for name in MNIST_FILES:
        assert (root / "mnist" / name).read_bytes() == (MNIST / name).read_bytes()


@needs_mnist
def test_corrupt_download_is_rejected_and_removed(
    tmp_path: Path, serve: Callable[[Path], str]
) -> None:
    site = tmp_path / "site"
    shutil.copytree(MNIST, site)
    labels = site / "train-labels-idx1-ubyte.gz"
    blob = bytearray(labels.read_bytes())
    blob[100] ^= 0xFF
    labels.chmod(0o644)
    labels.write_bytes(bytes(blob))
    root = tmp_path / "root"
    with pytest.raises(DatasetUnavailableError, match="md5 mismatch") as info:
        load("mnist", root=root, mirrors=[serve(site)], progress=False)
    assert info.value.missing == ["train-labels-idx1-ubyte.gz"]
    assert "train-labels-idx1-ubyte.gz" not in {p.name for p in (root / "mnist").iterdir()}
    assert not [p for p in (root / "mnist").iterdir() if p.name.startswith(".")]


def test_fetch_accepts_published_md5_with_progress_bar(
    tmp_path: Path, serve: Callable[[Path], str], capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.bin").write_bytes(b"x" * 5000)
    resource = Resource("a.bin", md5_file(site / "a.bin"))
    fetch([resource], tmp_path / "got", [serve(site)], progress=True)
    assert (tmp_path / "got" / "a.bin").read_bytes() == b"x" * 5000
    assert "a.bin" in capsys.readouterr().err  # the tqdm bar
    fetch([resource], tmp_path / "got", [], progress=False)  # present: nothing to fetch


def test_no_server_names_files_folder_and_mirrors(tmp_path: Path) -> None:
    dead = _closed_port_url()
    with pytest.raises(DatasetUnavailableError) as info:
        load("mnist", root=tmp_path, mirrors=[dead], progress=False)
    message = str(info.value)
    for name in ("train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", dead):
        assert name in message
    assert str(tmp_path / "mnist") in message
    assert len(info.value.missing) == 4 and len(info.value.attempts) == 4


# ---------------------------------------------------------------- CIFAR-10 pickles


def _cifar_batches(per_batch: int) -> dict[str, tuple[np.ndarray, list[int]]]:
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    return {
        n: (
            rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
            [i % 10 for i in range(per_batch)],
        )
        for n in names
    }


def _write_cifar_tar(path: Path, batches: dict[str, tuple[np.ndarray, list[int]]]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, (data, labels) in batches.items():
            blob = pickle.dumps({b"data": data, b"labels": labels, b"batch_label": name.encode()})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            archive.addfile(info, io.BytesIO(blob))


def _denormalise(x: torch.Tensor, data: object) -> np.ndarray:
    mean = torch.tensor(data.mean)[:, None, None]  # type: ignore[attr-defined]
    std = torch.tensor(data.std)[:, None, None]  # type: ignore[attr-defined]
    return torch.round((x * std + mean) * 255).to(torch.uint8).numpy()


@pytest.mark.parametrize("layout", ["archive", "extracted"])
def test_cifar10_parsing(tmp_path: Path, layout: str) -> None:
    batches = _cifar_batches(20)
    folder = tmp_path / "cifar10"
    folder.mkdir()
    archive = folder / "cifar-10-python.tar.gz"
    _write_cifar_tar(archive, batches)
    if layout == "extracted":
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                target = folder / member.name
                target.parent.mkdir(exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
        archive.unlink()
    data = load("cifar10", root=tmp_path, val_size=20, verify=False)
    assert (len(data.train), len(data.val), len(data.test)) == (80, 20, 20)
    assert data.test.x.shape == (20, 3, 32, 32) and data.in_shape == (3, 32, 32)
    assert data.augment == Augment(pad=4, flip=True)
    expected = batches["test_batch"][0].reshape(20, 3, 32, 32)
    np.testing.assert_array_equal(_denormalise(data.test.x, data), expected)
    assert data.test.y.tolist() == batches["test_batch"][1]
    with pytest.raises(DatasetUnavailableError, match="md5 mismatch"):
        load("cifar10", root=tmp_path, val_size=20)  # verify=True: not the published files


def test_cifar10_bad_pickle_is_a_format_error(tmp_path: Path) -> None:
    batches = _cifar_batches(10)
    batches["data_batch_3"] = (np.zeros((10, 100), dtype=np.uint8), [0] * 10)
    _write_cifar_tar(tmp_path / "cifar-10-python.tar.gz", batches)
    with pytest.raises(DatasetFormatError, match="data_batch_3"):
        load("cifar10", root=tmp_path, verify=False)


# ---------------------------------------------------------------- IDX format


def _idx_bytes(array: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, ">i4").tobytes()
    return header + array.astype(np.uint8).tobytes()


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), seed=st.integers(0, 99))
def test_idx_round_trip(shape: list[int], seed: int) -> None:
    array = np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)
    parsed = parse_idx(_idx_bytes(array))
    np.testing.assert_array_equal(parsed, array)
    assert parsed.flags.writeable


def test_idx_rejects_truncated_and_foreign_data() -> None:
    data = _idx_bytes(np.zeros((3, 4, 4), np.uint8))
    with pytest.raises(DatasetFormatError, match="truncated"):
        parse_idx(data[:-1])
    with pytest.raises(DatasetFormatError, match="not an IDX"):
        parse_idx(b"PK\x03\x04" + data)


# ---------------------------------------------------------------- batching and augmentation


def test_iterate_covers_each_sample_once_and_is_seeded() -> None:
    x = torch.arange(103, dtype=torch.float32)[:, None]
    y = torch.arange(103)
    seen = torch.cat([yb for _, yb in iterate(x, y, 10, shuffle=True)])
    assert torch.equal(seen.sort().values, y)
    sizes = [len(yb) for _, yb in iterate(x, y, 10, shuffle=False, drop_last=True)]
    assert sizes == [10] * 10

    def order(seed: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed)
        return torch.cat([yb for _, yb in iterate(x, y, 32, shuffle=True, generator=g)])

    assert torch.equal(order(3), order(3)) and not torch.equal(order(3), order(4))
    for xb, yb in iterate(x, y, 32, shuffle=True):
        assert torch.equal(xb[:, 0].long(), yb)  # inputs and labels stay paired
    with pytest.raises(ConfigError, match="batch_size"):
        next(iterate(x, y, 0, shuffle=False))


def test_pad_crop_shifts_a_dot_within_the_pad() -> None:
    x = torch.zeros(256, 1, 28, 28)
    x[:, :, 14, 14] = 1.0
    out = Augment(pad=2)(x, generator=torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    flat = out.reshape(256, -1).argmax(dim=1)
    rows, cols = flat // 28 - 14, flat % 28 - 14
    assert rows.abs().max() == 2 and cols.abs().max() == 2
    assert len(set(zip(rows.tolist(), cols.tolist(), strict=True))) == 25  # all 5×5 offsets
    assert torch.all(out.sum(dim=(1, 2, 3)) == 1.0)  # shifted, not blurred or lost


@settings(max_examples=20, deadline=None)
@given(
    pad=st.integers(1, 3),
    h=st.integers(4, 9),
    w=st.integers(4, 9),
    seed=st.integers(0, 999),
)
def test_pad_crop_is_a_crop_of_the_padded_image(pad: int, h: int, w: int, seed: int) -> None:
    x = torch.randn(6, 2, h, w, generator=torch.Generator().manual_seed(seed))
    out = _pad_crop(x, pad, generator=torch.Generator().manual_seed(seed))
    padded = torch.nn.functional.pad(x, (pad,) * 4, mode="reflect")
    # The offsets are the generator's first draw, rows then columns: a seeded run keeps its
    # augmentation whatever the gather's implementation.
    shift = torch.randint(0, 2 * pad + 1, (2, 6), generator=torch.Generator().manual_seed(seed))
    assert out.shape == x.shape and out.is_contiguous()
    for i, (r, c) in enumerate(shift.T.tolist()):
        assert torch.equal(out[i], padded[i, :, r : r + h, c : c + w])


def test_flip_mirrors_about_half() -> None:
    x = torch.randn(400, 3, 8, 8)
    out = Augment(flip=True)(x, generator=torch.Generator().manual_seed(1))
    flipped = torch.all((out == x.flip(3)).reshape(400, -1), dim=1)
    kept = torch.all((out == x).reshape(400, -1), dim=1)
    assert torch.all(flipped ^ kept)
    assert 150 < int(flipped.sum()) < 250


def test_augment_rejects_bad_pad() -> None:
    with pytest.raises(ConfigError, match="pad"):
        Augment(pad=-1)
    with pytest.raises(ConfigError, match="pad"):
        Augment(pad=8)(torch.zeros(2, 1, 8, 8))


def test_train_size_keeps_a_stratified_subset_and_leaves_val_alone() -> None:
    full = load("digits", seed=3)
    part = load("digits", seed=3, train_size=200)
    assert len(part.train) == 200 and torch.equal(part.val.y, full.val.y)
    counts = torch.bincount(part.train.y, minlength=10)
    assert counts.min() >= 15, "every class is kept in proportion"
    assert part.provenance["train_size"] == 200
    assert torch.equal(load("digits", seed=3, train_size=200).train.x, part.train.x)
    with pytest.raises(ConfigError, match="train_size"):
        load("digits", train_size=5)


def test_validation_joins_the_training_split_for_a_retraining() -> None:
    data = load("digits")
    both = data.with_val_in_train()
    assert torch.equal(both.train.x, torch.cat([data.train.x, data.val.x]))
    assert torch.equal(both.train.y, torch.cat([data.train.y, data.val.y]))
    assert both.val is data.val and both.test is data.test and both.mean == data.mean
    assert both.provenance["train_on"] == "train+val" and "train_on" not in data.provenance
    assert both.provenance["splits"]["train"] == len(data.train) + len(data.val)
    with pytest.raises(ConfigError, match="stream=False"):
        load("digits", stream=True, workers=0).with_val_in_train()
