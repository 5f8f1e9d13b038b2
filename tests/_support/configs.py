"""Config dicts that more than one test module loads."""

from __future__ import annotations

from typing import Any

#: The smallest config the config-key tests start from.
MINIMAL: dict[str, Any] = {
    "name": "keys",
    "dataset": "digits",
    "space": {"family": ["mlp"], "mlp.width": {"low": 8, "high": 16}, "budget": [400, 800]},
    "train": {"epochs": 1},
    "trials": 2,
}

#: The name of the search the CLI tests launch (``search launch`` in a process of its own).
CLI_NAME = "cli-search"
#: Small enough for two trials in seconds; budgets every MLP here can meet (no infeasible luck).
CLI_CONFIG = {
    "name": CLI_NAME,
    "dataset": "digits",
    "space": {
        "family": ["mlp"],
        "mlp.width": {"low": 16, "high": 32},
        "budget": {"low": 1500, "high": 2500},
        "ssn.generator": ["wavg", "emb"],
    },
    "train": {"epochs": 2, "batch_size": 64},
    "objectives": [["accuracy", "maximize"], ["params", "minimize"], ["flops_infer", "minimize"]],
    "constraints": ["params <= 3000"],
    "algorithm": "random",
    "trials": 8,
    "indicators": ["params", "flops_infer", "activations"],
    "measure": {"threads": 1},
    "seed": 0,
}
