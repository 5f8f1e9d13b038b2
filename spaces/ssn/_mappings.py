"""Mappings of layers to parameter stores (paper §3.4).

A mapping is a function ``fn(ctx: MappingContext) -> list[int]`` (a store index per layer),
registered with ``@MAPPINGS.register(name)``.
"""

from __future__ import annotations

import fnmatch
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from torch import nn

from spaces._errors import ConfigError
from spaces._registry import Registry

if TYPE_CHECKING:
    from spaces.ssn._net import ShapeshiftNet


@dataclass(frozen=True)
class MappingContext:
    """What a mapping may use to assign layers to stores.

    Attributes:
        names: Layer names (``"features.0.weight"``, ``"rnn.weight_hh_l0_reverse"``, ...).
        modules: Name of the module holding each layer.
        numels: Weight count of each layer.
        stores: Requested number of stores.
        seed: Seed of the ``shapeshift`` call.
        assignment: The user's ``{layer name, module name or glob: store}`` dict, if given.
        pretrain: The caller's ``pretrain(net)`` function, if given.
        probe: Builds the single-store network with 4 resized templates per layer that the
            ``auto`` mapping pretrains.
    """

    names: Sequence[str]
    modules: Sequence[str]
    numels: Sequence[int]
    stores: int
    seed: int
    assignment: Mapping[str, int] | None
    pretrain: Callable[[nn.Module], object] | None
    probe: Callable[[], ShapeshiftNet]


MAPPINGS: Registry[Callable[[MappingContext], list[int]]] = Registry("mapping")


@MAPPINGS.register("single")
def single(ctx: MappingContext) -> list[int]:
    """Every layer shares one store."""
    if ctx.stores != 1:
        raise ConfigError(f"stores={ctx.stores} with mapping='single'; it uses exactly 1 store")
    return [0] * len(ctx.names)


def _lookup(assignment: Mapping[str, int], name: str, module: str) -> int | None:
    if name in assignment:
        return assignment[name]
    if module in assignment:
        return assignment[module]
    for pattern, store in assignment.items():
        if fnmatch.fnmatchcase(name, pattern):
            return store
    return None


@MAPPINGS.register("manual")
def manual(ctx: MappingContext) -> list[int]:
    """The user's dict: keys are layer names, module names (all their weights) or globs."""
    if ctx.assignment is None:
        raise ConfigError(
            "mapping='manual' needs the assignment itself: pass mapping={layer name: store}"
        )
    result = [_lookup(ctx.assignment, n, m) for n, m in zip(ctx.names, ctx.modules, strict=True)]
    missing = [n for n, s in zip(ctx.names, result, strict=True) if s is None]
    if missing:
        raise ConfigError(f"mapping: no store given for layers {missing}")
    bad = {s for s in result if not isinstance(s, int) or not 0 <= s < ctx.stores}
    if bad:
        raise ConfigError(
            f"mapping: store indices {sorted(map(str, bad))} are outside 0..{ctx.stores - 1}"
            f" (stores={ctx.stores}); pass stores=<number of stores>"
        )
    return [int(s) for s in result if s is not None]  # none is None: refused above


def _check_count(ctx: MappingContext, what: str) -> None:
    if ctx.stores > len(ctx.names):
        raise ConfigError(
            f"stores={ctx.stores} with mapping={what!r}, but the model has only"
            f" {len(ctx.names)} generated layers; every store needs one"
        )


@MAPPINGS.register("random")
def random(ctx: MappingContext) -> list[int]:
    """A seeded random assignment in which every store gets at least one layer."""
    _check_count(ctx, "random")
    rng = np.random.default_rng(ctx.seed)
    stores = rng.integers(0, ctx.stores, size=len(ctx.names))
    first = rng.permutation(len(ctx.names))[: ctx.stores]
    stores[first] = np.arange(ctx.stores)
    return [int(s) for s in stores]


@MAPPINGS.register("auto")
def auto(ctx: MappingContext) -> list[int]:
    """The paper's learned mapping: pretrain one shared store briefly, cluster the coefficients.

    The probe gives every layer ``C = 4`` templates (the store split in four, each resized
    bilinearly to the layer) and a learned generator; after ``pretrain(probe)`` the layers'
    template coefficients are clustered with k-means into ``stores`` groups.
    """
    _check_count(ctx, "auto")
    if ctx.pretrain is None:
        raise ConfigError("mapping='auto' needs pretrain=<function(net) that trains net briefly>")
    if ctx.stores == 1:
        return [0] * len(ctx.names)
    net = ctx.probe()
    ctx.pretrain(net)
    features = np.stack([c.detach().cpu().double().numpy() for c in net.coefficients()])
    labels = kmeans(features, ctx.stores, seed=ctx.seed)
    _, compact = np.unique(labels, return_inverse=True)  # renumbered 0..k-1, none empty
    if compact.max() + 1 < ctx.stores:
        warnings.warn(
            f"mapping='auto' found only {compact.max() + 1} distinct groups for"
            f" stores={ctx.stores}; using that many stores",
            stacklevel=3,
        )
    return [int(s) for s in compact]


#: k-means restarts from fresh k-means++ seeds; the clustering of least inertia is kept. 30,
#: not scikit-learn's 10: its seeding is greedy (several candidates per centre), SciPy's is not;
#: on 300 random sets (3-30 points, 1-16 dimensions, k 2-6) 30 restarts were within 1 % of
#: scikit-learn's inertia or better in 91 % (10 restarts: 76 %), in ~0.05 s.
KMEANS_RESTARTS = 30


def kmeans(points: np.ndarray, k: int, *, seed: int, restarts: int = KMEANS_RESTARTS
           ) -> np.ndarray:  # fmt: skip
    """The cluster of each point: Lloyd's k-means from k-means++ seeds (SciPy's ``kmeans2``),
    the best of ``restarts`` by inertia (every cluster non-empty first), as scikit-learn's
    ``KMeans(n_init=...)`` does. SciPy, not scikit-learn: its import costs a trial worker 0.4 s
    of CPU, scikit-learn's 1.5 s (the ``auto`` mapping runs in every trial that uses it)."""
    from scipy.cluster.vq import kmeans2

    rng = np.random.default_rng(seed)
    best, least = np.zeros(len(points), int), (np.inf, np.inf)
    for _ in range(restarts):
        with warnings.catch_warnings():  # an emptied cluster: ranked below (next line)
            warnings.simplefilter("ignore")
            centres, labels = kmeans2(points, k, iter=100, minit="++", seed=rng)
        # fewer clusters rank last (scikit-learn moves an emptied centre to a far point)
        score = (k - len(np.unique(labels)), float(((points - centres[labels]) ** 2).sum()))
        if score < least:
            best, least = labels, score
    return best
