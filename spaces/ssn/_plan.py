"""Integer bookkeeping of a Shapeshifter Network: store sizes, templates per layer, and the budget.

Everything here is plain arithmetic, so the budget can be solved before any tensor is allocated.
The *budget* is the total trainable parameter count of the finished module: stores, generator and
upsampler parameters, and every parameter the model keeps (norms, biases, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spaces._errors import BudgetError

#: Templates per layer of the probe network that the ``auto`` mapping pretrains (paper §3.4).
PROBE_TEMPLATES = 4


@dataclass(frozen=True)
class StorePlan:
    """How one parameter store of ``size`` elements serves its layers.

    Attributes:
        size: Number of store parameters.
        layers: Indices (into the network's layer list) of the layers this store generates.
        numels: Weight count of each of those layers.
        templates: Templates per layer (``C``); 1 for a layer the store must upsample.
        starts: Window mode: where a layer's block of ``C * numel`` values starts, counted
            around the circular store (blocks are laid end to end, so every value is used);
            for an upsampled layer, how far the store is rolled before upsampling, so that
            upsampled layers do not all start from the same values.
        upsampled: Whether the store is smaller than the layer (window mode) or than a template's
            target (resize mode).
        template_limit: The effective maximum ``P``; raised above the requested one only when
            ``P`` templates per layer cannot cover the store (capacity mode).
        resize: Resize mode (the ``auto`` probe): the store is split into ``C`` equal templates
            that are each resized to every layer's size.
    """

    size: int
    layers: tuple[int, ...]
    numels: tuple[int, ...]
    templates: tuple[int, ...]
    starts: tuple[int, ...]
    upsampled: tuple[bool, ...]
    template_limit: int
    resize: bool = False

    @property
    def pairs(self) -> list[tuple[int, int]]:
        """(layer size, store size) of each upsampled layer, for upsampler parameter counts."""
        return [(n, self.size) for n, up in zip(self.numels, self.upsampled, strict=True) if up]


def _coverage(size: int, numels: Sequence[int], limit: int, cap: Callable[[int], int]) -> int:
    return sum(max(1, min(cap(n), limit)) * n for n in numels)


def window_store(
    size: int, layers: Sequence[int], numels: Sequence[int], *, limit: int, raisable: bool
) -> StorePlan | None:
    """Templates, blocks and rolls of one store; None if some store value would stay unused.

    ``C = max(1, min(size // numel, limit))`` (paper §3.1). If the blocks of all layers together
    are shorter than the store and no layer is upsampled (capacity mode), a layer may instead
    take ``ceil(size / numel)`` templates, its last one wrapping around the store's end, and the
    limit is raised until the blocks cover the store; a generator that cannot use more
    templates (``raisable=False``) makes that plan infeasible.
    """
    upsampled = [n > size for n in numels]
    counts = [
        1 if up else max(1, min(size // n, limit)) for n, up in zip(numels, upsampled, strict=True)
    ]
    if not any(upsampled) and sum(c * n for c, n in zip(counts, numels, strict=True)) < size:
        if not raisable:
            return None
        caps = [math.ceil(size / n) for n in numels]
        low, high = limit - 1, max(limit, *caps)  # smallest p >= limit; coverage(high) >= size

        def cap(n: int) -> int:
            return math.ceil(size / n)

        while high - low > 1:
            mid = (low + high) // 2
            if _coverage(size, numels, mid, cap) >= size:
                high = mid
            else:
                low = mid
        limit = high
        counts = [max(1, min(c, limit)) for c in caps]
    starts, cursor, rolled = [], 0, 0
    n_up = sum(upsampled)
    for c, n, up in zip(counts, numels, upsampled, strict=True):
        if up:
            starts.append((rolled * size) // n_up)
            rolled += 1
        else:
            starts.append(cursor)
            cursor += c * n
    return StorePlan(
        size, tuple(layers), tuple(numels), tuple(counts), tuple(starts), tuple(upsampled), limit
    )


def resize_store(size: int, layers: Sequence[int], numels: Sequence[int]) -> StorePlan:
    """The auto-mapping probe's store: ``PROBE_TEMPLATES`` equal templates, resized per layer."""
    c = PROBE_TEMPLATES
    return StorePlan(
        size,
        tuple(layers),
        tuple(numels),
        (c,) * len(numels),
        (0,) * len(numels),
        tuple(n > size // c for n in numels),
        c,
        resize=True,
    )


def split_sizes(total: int, weights: Sequence[int], unit: int) -> list[int]:
    """Splits ``total`` in proportion to ``weights`` (largest remainder), in multiples of ``unit``.

    Every share is at least one ``unit``, so the sum may exceed ``total`` for tiny totals.
    """
    units = total // unit
    wsum = sum(weights)
    raw = [units * w / wsum for w in weights]
    base = [math.floor(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: base[i] - raw[i])
    for i in order[: units - sum(base)]:
        base[i] += 1
    return [max(1, b) * unit for b in base]


@dataclass(frozen=True)
class Plan:
    """A full layout: the stores, the parameters kept by the model, and the generation overhead."""

    stores: tuple[StorePlan, ...]
    fixed: int
    overhead: int

    @property
    def store_params(self) -> int:
        return sum(s.size for s in self.stores)

    @property
    def total(self) -> int:
        """Trainable parameters of the finished module."""
        return self.fixed + self.store_params + self.overhead


class Planner:
    """Solves store sizes so that the whole module's parameter count meets a budget.

    Args:
        numels: Weight count of every generated layer.
        assignment: Store index of every layer.
        fixed: Trainable parameters the model keeps (norms, biases, unsupported layers).
        limit: Maximum templates per layer ``P``.
        max_templates: A generator's hard cap on templates (round robin: 1), or None.
        count_generator: Parameters a store's generator holds, given its layers' template counts.
        count_upsampler: Parameters a store's upsampler holds, given (layer, store) size pairs.
        resize: Build the ``auto`` probe layout instead of window templates.
    """

    def __init__(
        self,
        numels: Sequence[int],
        assignment: Sequence[int],
        *,
        fixed: int,
        limit: int,
        max_templates: int | None,
        count_generator: Callable[[Sequence[int]], int],
        count_upsampler: Callable[[Sequence[tuple[int, int]]], int],
        resize: bool = False,
    ) -> None:
        self.numels = list(numels)
        n_stores = max(assignment) + 1
        self.groups = [[i for i, s in enumerate(assignment) if s == k] for k in range(n_stores)]
        self.weights = [sum(self.numels[i] for i in g) for g in self.groups]
        self.fixed = fixed
        self.limit = limit if max_templates is None else min(limit, max_templates)
        self.raisable = max_templates is None
        self.count_generator = count_generator
        self.count_upsampler = count_upsampler
        self.resize = resize
        self.unit = PROBE_TEMPLATES if resize else 1

    def plan(self, total_store: int) -> Plan | None:
        """The layout with about ``total_store`` store parameters; None if it would waste some."""
        stores = []
        overhead = 0
        sizes = split_sizes(total_store, self.weights, self.unit)
        for size, group in zip(sizes, self.groups, strict=True):
            numels = [self.numels[i] for i in group]
            if self.resize:
                store = resize_store(size, group, numels)
            else:
                windowed = window_store(
                    size, group, numels, limit=self.limit, raisable=self.raisable
                )
                if windowed is None:
                    return None
                store = windowed
                overhead += self.count_upsampler(store.pairs)
            overhead += self.count_generator(store.templates)
            stores.append(store)
        return Plan(tuple(stores), self.fixed, overhead)

    def _no_upsampling(self) -> int:
        """A store total above which no store upsamples, so the total only grows."""
        total = sum(self.weights)
        return (
            max(
                math.ceil(max(self.numels[i] for i in g) * total / w)
                for g, w in zip(self.groups, self.weights, strict=True)
            )
            + len(self.groups) * self.unit
        )

    def _cheapest(self) -> tuple[int, Plan]:
        """The store total with the smallest module (upsampler overhead shrinks as stores grow)."""
        low = len(self.groups) * self.unit
        high = max(low, self._no_upsampling()) if not self.resize else low

        def candidates(a: int, b: int, factor: float) -> set[int]:
            points, t = {a, b}, float(a)
            while t < b:
                points.add(int(t))
                t = max(t * factor, t + 1)
            return points

        def best_of(points: set[int]) -> tuple[int, Plan]:
            plans = [(t, self.plan(t)) for t in sorted(points)]
            feasible = [(t, p) for t, p in plans if p is not None]
            if not feasible:
                raise BudgetError("no store size uses every store parameter for this model")
            return min(feasible, key=lambda tp: (tp[1].total, tp[0]))

        t, _ = best_of(candidates(low, high, 1.02))
        return best_of(candidates(max(low, int(t / 1.02)), min(high, int(t * 1.02) + 1), 1.001))

    def minimum(self) -> int:
        """The smallest total any layout reaches: the minimum budget of this module."""
        return self._cheapest()[1].total

    def solve(self, budget: int, *, what: str) -> Plan:
        """The largest layout whose total is at most ``budget``; it uses at least 90 % of it.

        Raises:
            BudgetError: The budget is below the smallest buildable module (the message states
                that minimum), or above what the generator can use without idle parameters.
        """
        t_min, cheapest = self._cheapest()
        if budget < cheapest.total:
            raise BudgetError(
                f"budget={budget} is too small for {what}: the model keeps {self.fixed} parameters"
                f" (norms, biases, unsupported layers) and the smallest stores with their"
                f" coefficients and masks need {cheapest.total - self.fixed} more;"
                f" minimum budget is {cheapest.total}"
            )

        plan = self._largest(budget, t_min)
        if plan.total < 0.9 * budget:
            raise BudgetError(
                f"budget={budget} is too large for {what}: with every store parameter in use it"
                f" reaches at most {plan.total} parameters (< 90 % of the budget); maximum budget"
                f" is {self._max_budget(plan.total, t_min)}"
            )
        return plan

    def _largest(self, budget: int, t_min: int) -> Plan:
        """The plan with the largest total at most ``budget`` (``plan(t_min)`` fits).

        The total grows with the store size between jumps, but not across them: more store
        parameters can need fewer templates or smaller masks (a total can drop by a fifth).
        So a bisection for the largest fitting store size is followed by probes of the larger
        sizes (every one up to 4,096 of them, else a geometric grid), each refined by a
        bisection up to the next probe.
        """

        totals: dict[int, int | None] = {}  # each store size is planned once

        def total(t: int) -> int | None:
            if t not in totals:
                plan = self.plan(t)
                totals[t] = None if plan is None else plan.total
            return totals[t]

        def fits(t: int) -> bool:
            value = total(t)
            return value is not None and value <= budget

        def fitting_total(t: int) -> int:  # fits(t)
            value = total(t)
            assert value is not None
            return value

        def last_fit(low: int, high: int) -> int:  # fits(low); high is beyond the fits sought
            while high - low > 1:
                mid = (low + high) // 2
                if fits(mid):
                    low = mid
                else:
                    high = mid
            return low

        end = budget - self.fixed + 1  # no store size at or beyond it fits
        best = last_fit(t_min, end)
        if end - best <= 4096:
            probes = list(range(best + 1, end))
        else:
            probes = sorted({min(end - 1, int(best * 1.01**k)) for k in range(1, 2000)} - {best})
        for probe, upto in zip(probes, [*probes[1:], end], strict=False):  # [] when no probe
            if fits(probe) and fitting_total(probe) > fitting_total(best):
                best = last_fit(probe, upto)
        plan = self.plan(best)
        assert plan is not None
        return plan

    def _max_budget(self, reached: int, t_min: int) -> int:
        """A budget this model meets (at least 90 % used), below the one that was too large."""
        limit = math.floor(reached / 0.9)
        while (best := self._largest(limit, t_min).total) < 0.9 * limit:
            limit = math.floor(best / 0.9)
        return limit
