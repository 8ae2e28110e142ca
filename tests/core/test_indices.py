"""Typed token indices: one parser for the command line and the explorer, with the stricter rule of the two it
replaced (commas only, every index checked against the tokens), each refusal in one line naming the field."""

from __future__ import annotations

import pytest

from attndyn import InputError
from attndyn._validation import parse_indices


def test_indices_keep_their_order_and_repeats():
    assert parse_indices("3, 1,1", "--clusters", 4) == [3, 1, 1]  # --clusters: one leader per token
    assert parse_indices("0", "leaders") == [0]


@pytest.mark.parametrize(
    ("text", "n", "message"),
    [
        ("", 4, r"^leaders is empty; give comma-separated token indices such as 0,2,5$"),
        (" , ", 4, r"^leaders is empty; "),
        ("1 2", 4, r"^leaders must be comma-separated token indices such as 0,2,5, got '1 2'$"),
        ("1;2", 4, r"^leaders must be comma-separated"),
        ("0,,2", 4, r"^leaders must be comma-separated"),
        ("1.5", 4, r"^leaders must be comma-separated"),
        ("9", 4, r"^leaders: token 9 does not exist; the indices run from 0 to 3$"),
        ("2,-1", 4, r"^leaders: token -1 does not exist; the indices run from 0 to 3$"),
        ("-1", None, r"^leaders: token -1 does not exist; indices start at 0$"),
    ],
)
def test_bad_indices_are_named_in_one_line(text, n, message):
    with pytest.raises(InputError, match=message):
        parse_indices(text, "leaders", n)


def test_the_command_line_and_the_explorer_share_the_parser():
    pytest.importorskip("panel")
    import inspect

    import attndyn.cli._control
    import attndyn.explore._pages.control as page

    # the command imports it when it runs (its help imports no torch): from the one module, by name
    assert "from .._validation import parse_indices" in inspect.getsource(attndyn.cli._control.control_cmd)
    assert "def parse_indices" not in inspect.getsource(attndyn.cli._control)
    assert page.parse_indices is parse_indices
