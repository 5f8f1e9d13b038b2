"""The derived spaces' refusal benchmark: the search's own screen counts every proposal of a
derived digits space once, and refuses few: none at params <= 2,000, a few budgets at 500."""

from __future__ import annotations

from search.config import SearchConfig
from search.derive import derive
from tests._support.bundles import load_benchmark


def test_every_proposal_is_counted_once_and_a_tight_limit_refuses_some() -> None:
    bench = load_benchmark("derive_refusals")
    counts = {}
    for limit in (500, 2000):
        config = SearchConfig.from_dict(derive(bench._config("digits", limit)).config)
        counts[limit] = bench._screened(config, 200)
        assert sum(counts[limit].values()) == 200
    assert counts[2000]["ok"] == 200
    assert 0 < counts[500]["budget"] <= 10  # budgets below their model's minimum, rare
