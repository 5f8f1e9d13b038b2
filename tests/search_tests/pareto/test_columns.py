"""search.record._schema.Column: one name per column wherever a table of trials goes (the frame,
the front that ``search pareto`` prints, their CSV and JSON, ``trials.csv``), and every cell a
value: a list or dict is JSON text, never a Python repr."""

from __future__ import annotations

import io
import json

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from search.pareto import front_table, trials_frame
from search.record._records import plain
from search.record._schema import Column
from tests.search_tests.studies import ROWS, npas_study

#: A condition that is a list and a metric that is a dict: the cells a repr would spoil.
SHAPED = [{**row, "cond_sample_shape": [1, 8, 8], "schedule": {"kind": "cosine", "warmup": 1},
           "epochs": 3} if "state" not in row else row for row in ROWS]  # fmt: skip


def _outputs(table: pd.DataFrame) -> dict[str, list[str]]:
    """The column names of a table as CSV and as JSON records (what ``--format`` prints)."""
    csv = pd.read_csv(io.StringIO(table.to_csv(index=False)))
    records = json.loads(table.to_json(orient="records", date_format="iso"))
    return {"csv": list(csv.columns), "json": list(records[0])}


def test_the_frame_the_front_and_their_csv_and_json_name_columns_alike() -> None:
    study = npas_study(SHAPED)
    frame = trials_frame(study)
    front = front_table(study)
    assert list(frame.columns[: len(Column.FIXED)]) == list(Column.FIXED)
    assert set(front.columns) <= set(frame.columns), "the front is a selection of the frame"
    for table in (frame, front):
        for kind, names in _outputs(table).items():
            assert names == list(table.columns), kind
            assert not [n for n in names if " " in n or n != n.strip()], kind
    assert [c for c in front.columns if c.startswith(Column.PARAMS_PREFIX)] == ["params_width"]


def test_a_list_or_dict_cell_is_json_text_in_every_output() -> None:
    frame = trials_frame(npas_study(SHAPED))
    csv = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
    for table in (frame, csv):
        done = table[table["state"] == "COMPLETE"]
        assert set(done["cond_sample_shape"]) == {"[1, 8, 8]"}
        assert json.loads(done["schedule"].iloc[0]) == {"kind": "cosine", "warmup": 1}
    text = frame.to_csv(index=False)
    assert "{'" not in text and "['" not in text, "no Python repr in a CSV cell"
    epochs = [line.split(",")[4] for line in text.splitlines()]
    assert epochs == ["epochs", "3", "3", "3", "3", "", "3"], "a count is an integer, or empty"


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=6,
    )
)
def test_every_cell_is_a_number_a_string_or_json_text(value) -> None:
    cell = plain(value)
    if isinstance(value, list | dict):
        assert isinstance(cell, str) and json.loads(cell) == value
    elif value is None:
        assert cell != cell  # NaN
    else:
        assert cell is value
