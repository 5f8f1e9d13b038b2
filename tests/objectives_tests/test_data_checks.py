"""A user's dataset read once before a search (issue 41, defect 8): each bad input is refused in
one line naming the file or split, before any study exists, and the fingerprint changes when
the data do. Before, a 0-byte or object-array .npz and a corrupt first PNG gave tracebacks, and
a NaN pixel, a label of 10**9, a corrupt later PNG and an x_test without y_test passed."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from PIL import Image
from torch.utils.data import Dataset

import objectives
import objectives._scan as scan
from objectives._custom import declare
from objectives.datasets import DATASETS, load
from search.record._data_record import differences
from spaces._errors import ConfigError
from tests.search_tests.userplugin import write_images

_names = itertools.count()


@pytest.fixture
def registered():
    """Declares datasets under fresh names and forgets them after the test."""
    names: list[str] = []

    def declared(spec: dict, base) -> Any:
        name = f"t-data-{next(_names)}"
        names.append(name)
        declare({"name": name, **spec}, base=base)
        return DATASETS.get(name)

    yield declared
    for name in names:
        DATASETS._entries.pop(name, None)


def _arrays(n: int = 60, *, side: int = 5, dtype=np.uint8) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (n, 1, side, side)).astype(dtype)
    y = np.arange(n) % 3
    cut = n * 3 // 4
    return {"x_train": x[:cut], "y_train": y[:cut], "x_test": x[cut:], "y_test": y[cut:]}


def _refused(entry, *fragments: str) -> str:
    with pytest.raises(ConfigError) as err:
        entry.check()
    text = str(err.value)
    assert "\n" not in text and all(f in text for f in fragments), text
    assert "allow_pickle" not in text and "unsafely" not in text, text
    return text


def _npz(tmp_path, **arrays) -> str:
    np.savez(tmp_path / "d.npz", **arrays)
    return "d.npz"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", "cannot be read: it is empty"),
        (b"not an archive at all" * 3, "cannot be read: it is not an .npz archive"),
        (b"PK\x03\x04truncated", "cannot be read: BadZipFile"),
    ],
    ids=["0 bytes", "garbage", "truncated zip"],
)
def test_an_unreadable_npz_is_one_line(tmp_path, registered, content, fragment):
    (tmp_path / "d.npz").write_bytes(content)
    _refused(
        registered({"npz": "d.npz"}, tmp_path), f"dataset.npz: {tmp_path / 'd.npz'}", fragment
    )


def test_an_npz_of_python_objects_is_refused_without_unpickling(tmp_path, registered):
    ragged = np.array([np.zeros(3), np.zeros(2)], dtype=object)
    np.savez(tmp_path / "d.npz", x_train=ragged, y_train=np.arange(2))
    _refused(registered({"npz": "d.npz"}, tmp_path), "holds Python objects (pickled)")


def test_a_plain_npy_given_as_npz_is_refused(tmp_path, registered):
    np.save(tmp_path / "d.npy", np.zeros(3))
    (tmp_path / "d.npy").rename(tmp_path / "d.npz")
    _refused(registered({"npz": "d.npz"}, tmp_path), "it is a .npy array, not an .npz archive")


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_one_non_finite_pixel_is_refused_naming_its_sample(tmp_path, registered, value):
    arrays = _arrays(dtype=np.float32)
    arrays["x_train"][7, 0, 2, 3] = value
    entry = registered({"npz": _npz(tmp_path, **arrays)}, tmp_path)
    _refused(entry, "split 'train': 1 sample(s) hold values that are not finite",
             f"sample 7, {value}", "allowed: finite values")  # fmt: skip


def test_a_huge_label_is_a_class_of_its_own_not_a_billion_classes(tmp_path, registered):
    """Labels not 0..K-1 are mapped to their sorted order, so a stray 10**9 is one more class
    (named in check's fingerprint), never a billion outputs."""
    arrays = _arrays()
    arrays["y_train"][4] = 10**9
    entry = registered({"npz": _npz(tmp_path, **arrays)}, tmp_path)
    assert entry.check()["labels"] == [0, 1, 2, 10**9] and entry.num_classes == 4
    assert entry.class_names == [0, 1, 2, 10**9]


def test_a_gap_in_the_labels_is_mapped_unless_the_classes_are_declared(tmp_path, registered):
    arrays = _arrays()
    for split in ("y_train", "y_test"):
        arrays[split][arrays[split] == 2] = 3  # labels 0, 1, 3
    name = _npz(tmp_path, **arrays)
    mapped = registered({"npz": name}, tmp_path)
    assert mapped.num_classes == 3 and mapped.check()["labels"] == [0, 1, 3]
    data = mapped.load()
    assert sorted(set(data.test.y.tolist())) == [0, 1, 2]  # 3 read as class 2
    assert data.provenance["classes"] == [0, 1, 3]
    entry = registered({"npz": name, "num_classes": 4}, tmp_path)  # indices, as given
    assert entry.check()["classes"] == 4 and entry.num_classes == 4
    assert entry.class_names is None and "labels" not in entry.check()
    _refused(registered({"npz": name, "num_classes": 3}, tmp_path), "label 3 with num_classes=3")
    with pytest.raises(ConfigError, match="num_classes: got 1; allowed: an int >= 2"):
        registered({"npz": name, "num_classes": 1}, tmp_path)


def test_a_class_the_training_split_lacks_is_refused_unless_the_classes_are_declared(
    tmp_path, registered
):
    """Labels 0, 1, 2 in training, 0-3 in test: class 3 can never be learnt (an unseen-data
    probe passed such a set through search check, 4 classes derived)."""
    arrays = _arrays()
    arrays["y_test"][:5] = 3
    name = _npz(tmp_path, **arrays)
    _refused(registered({"npz": name}, tmp_path), "label 3 occurs (5 in split 'test') but never "
             "in the training split", "num_classes")  # fmt: skip
    entry = registered({"npz": name, "num_classes": 4}, tmp_path)  # the user says so
    assert entry.check()["classes"] == 4


@pytest.mark.parametrize(("train", "test", "names"), [
    (["cat", "dog", "emu"], ["emu", "cat"], ["cat", "dog", "emu"]),  # strings
    ([1, 2, 3], [3, 1], [1, 2, 3]),  # 1..K, as the UCR archive gives them
    ([-1, 1], [1, -1], [-1, 1]),  # -1 and 1
    ([True, False], [False, True], [False, True]),  # booleans
    ([b"no", b"yes"], [b"yes"], ["no", "yes"]),  # bytes, as HDF5 files give text
    ([1.0, 2.0, 3.0], [2.0], [1, 2, 3]),  # whole floats, as pandas gives integer columns with NaN
])  # fmt: skip
def test_any_kind_of_class_label_is_mapped_in_sorted_order(tmp_path, registered, train, test,
                                                           names):  # fmt: skip
    arrays = _arrays()
    cut = len(arrays["y_train"])
    arrays["y_train"] = np.resize(np.asarray(train), cut)
    arrays["y_test"] = np.resize(np.asarray(test), len(arrays["y_test"]))
    entry = registered({"npz": _npz(tmp_path, **arrays)}, tmp_path)
    assert entry.check()["labels"] == names and entry.num_classes == len(names)
    data = entry.load(val_size=0.2)
    codes = {str(n): i for i, n in enumerate(names)}
    plain = {bytes: bytes.decode, float: int}
    expected = [codes[str(plain.get(type(v), lambda v: v)(v))]
                for v in arrays["y_test"].tolist()]  # fmt: skip
    assert data.test.y.tolist() == expected  # each test label read as its class's index


def test_labels_as_a_column_are_read_as_a_vector(tmp_path, registered):
    arrays = _arrays()
    arrays["y_train"], arrays["y_test"] = arrays["y_train"][:, None], arrays["y_test"][:, None]
    entry = registered({"npz": _npz(tmp_path, **arrays)}, tmp_path)
    assert entry.num_classes == 3 and "labels" not in entry.check()  # 0..2: used as given


@pytest.mark.parametrize(("y_train", "y_test", "fragment"), [
    (np.linspace(0, 1, 45), None, "label 0.022"),  # a regression target
    (np.resize([0.0, np.nan], 45), None, "label nan (sample 1, 22 such)"),
    (np.resize(["a", "b"], 45), np.resize([0, 1], 15), "labels of dtypes <U1 in split 'train', "
     "int64 in split 'test'"),
    (np.resize(["a", "b"], 45), np.resize(["a", "c"], 15), "label 'c' occurs (7 in split 'test') "
     "but never in the training split"),
])  # fmt: skip
def test_labels_that_are_not_classes_are_refused(tmp_path, registered, y_train, y_test,
                                                 fragment):  # fmt: skip
    arrays = _arrays()
    arrays["y_train"] = y_train
    if y_test is not None:
        arrays["y_test"] = y_test
    _refused(registered({"npz": _npz(tmp_path, **arrays)}, tmp_path), fragment)


def test_string_labels_with_num_classes_are_refused(tmp_path, registered):
    arrays = _arrays()
    arrays["y_train"], arrays["y_test"] = (np.resize(["a", "b", "c"], 45),
                                           np.resize(["a", "b", "c"], 15))  # fmt: skip
    entry = registered({"npz": _npz(tmp_path, **arrays), "num_classes": 3}, tmp_path)
    _refused(entry, "labels of dtype <U1 with num_classes=3", "no num_classes")


@pytest.mark.parametrize(
    ("dropped", "fragment"),
    [
        ("y_test", "holds x_test but no y_test; allowed: both, or neither"),
        ("x_test", "holds y_test but no x_test"),
    ],
)
def test_half_a_split_is_refused_not_ignored(tmp_path, registered, dropped, fragment):
    arrays = _arrays()
    del arrays[dropped]
    _refused(registered({"npz": _npz(tmp_path, **arrays)}, tmp_path), fragment)


def test_half_a_validation_split_is_refused(tmp_path, registered):
    arrays = {**_arrays(), "x_val": _arrays()["x_test"]}
    _refused(registered({"npz": _npz(tmp_path, **arrays)}, tmp_path), "x_val but no y_val")


def test_an_empty_npy_is_one_line(tmp_path, registered):
    (tmp_path / "x.npy").write_bytes(b"")
    np.save(tmp_path / "y.npy", np.arange(4))
    _refused(
        registered({"npy": ["x.npy", "y.npy"]}, tmp_path), "x.npy cannot be read: it is empty"
    )


def _corrupt(path) -> None:
    path.write_bytes(path.read_bytes()[:30])  # a PNG cut inside its first chunk


@pytest.mark.parametrize("which", ["000.png", "011.png"], ids=["first", "later"])
def test_a_corrupt_png_is_refused_counted_and_named(tmp_path, registered, which):
    root = write_images(tmp_path / "images")
    for bad in (root / "train" / "dark" / which, root / "test" / "light" / "003.png"):
        _corrupt(bad)
    entry = registered({"image_folder": str(root)}, tmp_path)
    _refused(entry, "split 'train': 1 of 48 sample(s) checked could not be read",
             f"dark/{which} cannot be read as an image", "skip_unreadable: true")  # fmt: skip


def test_unreadable_images_are_skipped_and_counted_when_asked(tmp_path, registered):
    root = write_images(tmp_path / "images")
    for bad in ("000.png", "011.png"):
        _corrupt(root / "train" / "dark" / bad)
    (root / "train" / "light" / "zz.png").write_bytes(b"")
    entry = registered({"image_folder": str(root), "skip_unreadable": True}, tmp_path)
    fingerprint = entry.check()
    assert fingerprint["skipped"] == 3 and fingerprint["splits"]["train"]["samples"] == 46
    data = load(entry.name, val_size=6)
    assert len(data.train) + len(data.val) + len(data.test) == 46 + 16
    with pytest.raises(ConfigError, match="skip_unreadable: got True with npz"):
        registered({"npz": _npz(tmp_path, **_arrays()), "skip_unreadable": True}, tmp_path)


class _Broken(Dataset):
    """A user's Dataset whose last sample cannot be read."""

    targets = np.arange(10) % 2

    def __len__(self) -> int:
        return 10

    def __getitem__(self, i: int):
        if i == 9:
            raise KeyError("lost sample")
        return np.zeros((1, 2, 2), np.float32), int(self.targets[i])


def test_a_registered_dataset_whose_sample_raises_is_one_line():
    objectives.register_dataset("t-broken", source="a test")(
        lambda: objectives.Splits(train=_Broken(), test=_Broken())
    )
    try:
        _refused(DATASETS.get("t-broken"), "split 'train': 1 of 10 sample(s) checked",
                 "sample 9: KeyError: 'lost sample'")  # fmt: skip
    finally:
        DATASETS._entries.pop("t-broken", None)


def _fingerprint(tmp_path, registered, arrays) -> dict:
    return registered({"npz": _npz(tmp_path, **arrays)}, tmp_path).check()


def test_the_fingerprint_notices_remapped_labels_and_a_new_shape(tmp_path, registered):
    before = _fingerprint(tmp_path, registered, _arrays())
    again = _fingerprint(tmp_path, registered, _arrays())
    assert {**before, "dataset": ""} == {**again, "dataset": ""}, "the same data, the same print"
    remapped = _arrays()
    for split in ("y_train", "y_test"):
        remapped[split] = (remapped[split] + 1) % 3
    found = differences(before, _fingerprint(tmp_path, registered, remapped))
    assert [f.split(" ")[:2] for f in found] == [["test", "labels"], ["train", "labels"]]
    smaller = differences(before, _fingerprint(tmp_path, registered, _arrays(side=4)))
    assert "train shape [1, 5, 5] -> [1, 4, 4]" in smaller


def test_a_large_array_is_hashed_by_a_sample_but_scanned_whole(tmp_path, registered, monkeypatch):
    monkeypatch.setattr(scan, "HASH_ALL_BELOW", 100)
    monkeypatch.setattr(scan, "SCAN_SAMPLES", 8)
    arrays = _arrays(n=400, dtype=np.float32)
    fingerprint = _fingerprint(tmp_path, registered, arrays)
    assert fingerprint["splits"]["train"]["samples_hashed"] == 8
    arrays["x_train"][151, 0, 0, 0] = np.nan  # no sample hashed, still found
    _refused(registered({"npz": _npz(tmp_path, **arrays)}, tmp_path), "sample 151, nan")


def test_an_image_folder_with_a_bad_label_folder_mode_still_reads(tmp_path, registered):
    """An RGBA image among grey ones is converted, not refused: readable is what counts."""
    root = write_images(tmp_path / "images")
    Image.new("RGBA", (8, 8), (1, 2, 3, 4)).save(root / "train" / "dark" / "rgba.png")
    fingerprint = registered({"image_folder": str(root)}, tmp_path).check()
    assert fingerprint["splits"]["train"]["shape"] == [1, 8, 8]


def test_labels_that_look_like_identifiers_are_refused_in_words(tmp_path, registered):
    """A column of row ids passed as labels (one sample a class) cannot be split into training
    and validation; the refusal says why, not only the val_size range it cannot meet."""
    arrays = _arrays()
    arrays["y_train"] = np.array([f"row{i}" for i in range(45)])
    arrays["y_test"] = arrays["y_train"][:15]
    entry = registered({"npz": _npz(tmp_path, **arrays)}, tmp_path)
    with pytest.raises(ConfigError, match=r"45 training samples of 45 classes: .* look like "
                       r"identifiers, not classes"):  # fmt: skip
        entry.load()


def test_numbers_stored_as_text_are_refused_saying_how_to_convert(tmp_path, registered):
    """Before: a traceback from torch (``can't convert np.ndarray of type numpy.str_``)."""
    arrays = _arrays()
    arrays["x_train"] = arrays["x_train"].astype(str)
    entry = registered({"npz": _npz(tmp_path, **arrays)}, tmp_path)
    _refused(entry, "split 'train': samples of dtype <U", "x.astype('float32')",
             "allowed: integer or floating-point values")  # fmt: skip


def test_a_folder_of_photos_whose_first_image_is_grey_is_read_in_colour(tmp_path, registered):
    """Before, the first image alone set the channels: one grey scan first, every photo grey.
    Now most of the images do (a stray RGBA among grey ones: the test above)."""
    root = write_images(tmp_path / "images", per_class=3)  # grey squares
    photo = np.random.default_rng(0).integers(0, 255, (8, 8, 3)).astype(np.uint8)
    for name in ("dark", "light"):
        for i in range(4):
            Image.fromarray(photo).save(root / "train" / name / f"photo{i}.png")
    assert sorted((root / "train" / "dark").iterdir())[0].name == "000.png"  # grey, first
    mixed = registered({"image_folder": str(root)}, tmp_path)
    assert load(mixed.name, val_size=4).in_shape[0] == 3
