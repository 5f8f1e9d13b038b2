"""Weight generators: how a layer combines the templates it selected from its store (paper §3.2).

One generator instance serves one store. To add one, subclass :class:`Generator` and register it::

    @GENERATORS.register("mine")
    class Mine(Generator): ...
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from spaces._registry import Registry


def orthogonal_rows(rows: int, cols: int, rng: torch.Generator) -> Tensor:
    """A ``rows x cols`` matrix of unit rows that are as orthogonal to each other as possible.

    With ``rows <= cols`` the rows are orthonormal; with more rows than columns they form a
    normalised tight frame (orthonormal columns, then unit rows). Layers of a store start with
    coefficients this far apart, so their weights start as different as the templates allow.
    """
    gauss = torch.randn(max(rows, cols), min(rows, cols), generator=rng, dtype=torch.float64)
    q, r = torch.linalg.qr(gauss)
    q = q * torch.sign(torch.diagonal(r))  # Haar-distributed
    m = q if rows >= cols else q.T
    return (m / m.norm(dim=1, keepdim=True)).float()


class Generator(nn.Module):
    """Combines each layer's ``C`` templates into its weight, for all layers of one store.

    Args:
        templates: Template count ``C`` of every layer of the store, in store order.
        rng: Source of randomness for the initial values (seeded by ``shapeshift``).
        **options: Generator-specific options (``generator_options`` of ``shapeshift``).
    """

    #: Most templates a layer can use (round robin uses exactly one); None: no limit.
    max_templates: ClassVar[int | None] = None

    @classmethod
    def num_params(cls, templates: Sequence[int], **options: Any) -> int:
        """Trainable parameters an instance for these template counts will hold (none unless a
        subclass learns some; a wrong count is caught when the network is built)."""
        return 0

    def __init__(self, templates: Sequence[int], *, rng: torch.Generator, **options: Any) -> None:
        super().__init__()
        self.templates = tuple(templates)

    def coefficients(self) -> list[Tensor | None]:
        """Per layer, the weight of each of its templates; None means "use the one template"."""
        raise NotImplementedError

    def _groups(self) -> dict[int, list[int]]:
        """Layer positions of each template count above one, in first-seen order."""
        groups: dict[int, list[int]] = {}
        for i, c in enumerate(self.templates):
            if c > 1:
                groups.setdefault(c, []).append(i)
        return groups


GENERATORS: Registry[type[Generator]] = Registry("generator")


@GENERATORS.register("wavg")
class WAvg(Generator):
    """Template weighted averaging (Savarese et al.): ``w = sum_k alpha_k T_k``, alpha learned.

    The alphas of the layers with the same template count start as orthogonal rows.
    """

    @classmethod
    def num_params(cls, templates: Sequence[int], **options: Any) -> int:
        return sum(c for c in templates if c > 1)

    def __init__(self, templates: Sequence[int], *, rng: torch.Generator, **options: Any) -> None:
        super().__init__(templates, rng=rng)
        init = [torch.zeros(0)] * len(self.templates)
        for c, members in self._groups().items():
            for i, row in zip(members, orthogonal_rows(len(members), c, rng), strict=True):
                init[i] = row
        self.alpha = nn.Parameter(torch.cat(init))

    def coefficients(self) -> list[Tensor | None]:
        parts = self.alpha.split([c if c > 1 else 0 for c in self.templates])
        return [p if c > 1 else None for p, c in zip(parts, self.templates, strict=True)]


@GENERATORS.register("emb")
class Emb(Generator):
    """Layer embeddings: ``alpha = softmax(E(e_j))``, e_j a learned per-layer embedding.

    ``E`` is one linear layer (``dim -> C``) shared by the layers of the store with the same
    template count, as in the paper. The embeddings start as orthogonal rows.

    Options:
        dim: Embedding size (paper: 24).
    """

    @classmethod
    def num_params(cls, templates: Sequence[int], *, dim: int = 24, **options: Any) -> int:
        multi = [c for c in templates if c > 1]
        return dim * len(multi) + sum(dim * c + c for c in set(multi))

    def __init__(
        self, templates: Sequence[int], *, rng: torch.Generator, dim: int = 24, **options: Any
    ) -> None:
        super().__init__(templates, rng=rng)
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"generator_options: dim={dim!r}; expected a positive int")
        groups = self._groups()
        # Embedding rows are ordered by group so that each group is one contiguous slice.
        self._order = [(c, members) for c, members in groups.items()]
        n_multi = sum(len(m) for m in groups.values())
        self.embedding = nn.Parameter(
            orthogonal_rows(n_multi, dim, rng) if n_multi else torch.zeros(0, dim)
        )
        bound = 1.0 / math.sqrt(dim)  # nn.Linear's default init, drawn from our generator
        self.heads = nn.ParameterDict()
        for c, _ in self._order:
            self.heads[f"w{c}"] = nn.Parameter((torch.rand(c, dim, generator=rng) * 2 - 1) * bound)
            self.heads[f"b{c}"] = nn.Parameter((torch.rand(c, generator=rng) * 2 - 1) * bound)

    def coefficients(self) -> list[Tensor | None]:
        out: list[Tensor | None] = [None] * len(self.templates)
        start = 0
        for c, members in self._order:
            rows = self.embedding[start : start + len(members)]
            start += len(members)
            alphas = torch.softmax(rows @ self.heads[f"w{c}"].T + self.heads[f"b{c}"], dim=-1)
            for i, alpha in zip(members, alphas, strict=True):
                out[i] = alpha
        return out


@GENERATORS.register("avg")
class Avg(Generator):
    """Candidate averaging: the plain mean of the templates, nothing learned (a baseline)."""

    mean: Tensor  # a buffer

    def __init__(self, templates: Sequence[int], *, rng: torch.Generator, **options: Any) -> None:
        super().__init__(templates, rng=rng)
        weights = [torch.full((c,), 1.0 / c) for c in self.templates if c > 1]
        self.register_buffer(
            "mean", torch.cat(weights) if weights else torch.zeros(0), persistent=False
        )

    def coefficients(self) -> list[Tensor | None]:
        parts = self.mean.split([c if c > 1 else 0 for c in self.templates])
        return [p if c > 1 else None for p, c in zip(parts, self.templates, strict=True)]


@GENERATORS.register("rr")
class RoundRobin(Generator):
    """Round robin: every layer takes its own slice of the store directly (one template).

    Since a layer can use only one template, a store larger than all its layers together would
    leave parameters idle; such budgets are refused.
    """

    max_templates = 1

    def coefficients(self) -> list[Tensor | None]:
        return [None] * len(self.templates)
