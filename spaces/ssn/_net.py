"""Shapeshifter Networks: a model whose layer weights are generated from parameter stores."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import Tensor, nn

from spaces import _compat
from spaces._checks import check_int, options_of
from spaces._errors import ConfigError, NpasError
from spaces.ssn._combine import Combine, Window, windows
from spaces.ssn._generators import GENERATORS, Generator
from spaces.ssn._layers import (
    SUPPORTED,
    LayerSpec,
    WeightSwapper,
    find_layers,
    restore_parameters,
)
from spaces.ssn._mappings import MAPPINGS, MappingContext
from spaces.ssn._options import SSNOptions
from spaces.ssn._plan import PROBE_TEMPLATES, Planner, StorePlan
from spaces.ssn._upsamplers import UPSAMPLERS, resize


@dataclass(frozen=True)
class LayerInfo:
    """One generated weight, for reports: where it comes from and how it is made."""

    name: str
    shape: tuple[int, ...]
    numel: int
    store: int
    templates: int
    upsampled: bool


def _trainable(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _layout(store: StorePlan) -> tuple[tuple[int, tuple[Window, ...]], ...]:
    """(numel, template windows) of every layer the store serves without upsampling."""
    return tuple(
        (n, windows(start, c, n, store.size))
        for c, n, up, start in zip(
            store.templates, store.numels, store.upsampled, store.starts, strict=True
        )
        if not up
    )


def _layer_infos(stores: tuple[StorePlan, ...], specs: list[LayerSpec]) -> tuple[LayerInfo, ...]:
    infos: dict[int, LayerInfo] = {}
    for k, store in enumerate(stores):
        for j, c, up in zip(store.layers, store.templates, store.upsampled, strict=True):
            infos[j] = LayerInfo(specs[j].name, specs[j].shape, specs[j].numel, k, c, up)
    return tuple(infos[j] for j in range(len(specs)))


class ShapeshiftNet(nn.Module):
    """Computes what the wrapped model computes, with its weights generated from stores.

    Build it with :func:`shapeshift`. Call it like the original model. Each forward pass
    generates every layer's weight once, however often a layer is called: per store, one fused
    autograd step reads every directly served layer's templates as views of the store and
    combines them (its backward writes one store gradient in place), and upsampled layers are
    expanded from rolled copies of the store. In eval mode under ``torch.no_grad()`` the
    generated weights are cached until a parameter changes.

    Attributes:
        model: The deep-copied model; its supported weights are plain tensors installed before
            each forward pass, every other parameter (norms, biases) is its own.
        stores: One flat parameter vector per store.
        generators: One :class:`Generator` per store.
        upsamplers: One upsampler per store (unused by stores that never upsample).
        budget: The requested total of trainable parameters.
        plain_params: Trainable parameters of the original model.
        mapping: Layer name -> store index.
        layers: A :class:`LayerInfo` per generated weight.
        template_limits: Effective ``P`` of each store (above the requested one only when ``P``
            templates per layer cannot cover a large store).
        generations: How many times the weights were generated (for checking the cache).
    """

    scales: Tensor  # a buffer: each generated weight's scale

    def __init__(
        self,
        model: nn.Module,
        budget: int,
        *,
        assignment: list[int],
        options: SSNOptions = SSNOptions(),
        probe: bool = False,
    ) -> None:
        super().__init__()
        self.plain_params = _trainable(model)
        self.model = copy.deepcopy(model)
        specs = find_layers(self.model)
        if not specs:
            raise ConfigError(f"model {type(model).__name__} has no trainable {SUPPORTED} weight")
        if len(assignment) != len(specs):
            raise ConfigError(
                f"assignment has {len(assignment)} entries; the model has {len(specs)} layers"
            )
        first = specs[0].slots[0]
        like = _compat.own_parameters(self.model.get_submodule(first.module))[first.attr]
        assert like is not None  # find_layers found a trainable weight there
        self._specs = specs
        generator, upsampler = options.generator, options.upsampler
        gen_cls = GENERATORS.get(generator)
        ups_cls = UPSAMPLERS.get(upsampler)
        gen_opts, ups_opts = options.gen_options, options.ups_options
        planner = _planner(self.model, specs, assignment, options, probe=probe)
        self._swapper = WeightSwapper(self.model, specs)
        self.plan = planner.solve(budget, what=_what(options, planner))
        self.budget = int(budget)
        self.generator_name, self.upsampler_name = generator, upsampler
        rng = torch.Generator().manual_seed(options.seed)
        device, dtype = like.device, like.dtype
        self.stores = nn.ParameterList()
        self.generators = nn.ModuleList()
        self.upsamplers = nn.ModuleList()
        for store in self.plan.stores:
            var = sum(specs[j].default_var * specs[j].numel for j in store.layers)
            std = math.sqrt(var / sum(store.numels))
            theta = torch.randn(store.size, generator=rng).mul_(std)
            self.stores.append(nn.Parameter(theta.to(device=device, dtype=dtype)))
            gen = gen_cls(store.templates, rng=rng, **gen_opts)
            self.generators.append(gen.to(device=device, dtype=dtype))
            ups = ups_cls(store.pairs, rng=rng, **ups_opts)
            self.upsamplers.append(ups.to(device=device, dtype=dtype))
            if store.resize:  # see _resized
                signs = torch.randint(0, 2, (sum(store.numels),), generator=rng).mul_(2).sub_(1)
                signs = signs.to(device=device, dtype=dtype)
                self.register_buffer(f"probe_signs_{len(self.stores) - 1}", signs)
        self.register_buffer("scales", torch.ones(len(specs), device=device, dtype=dtype))
        self._layouts = [_layout(store) for store in self.plan.stores]
        self.mapping = {s.name: assignment[i] for i, s in enumerate(specs)}
        self.layers = _layer_infos(self.plan.stores, specs)
        self.template_limits = tuple(s.template_limit for s in self.plan.stores)
        self.generations = 0
        self._cache: tuple[tuple, list[Tensor]] | None = None
        self.training = self.model.training  # a model handed over in eval mode stays there
        self._init_scales()
        if self.num_params != self.plan.total:
            raise NpasError(
                f"generator {generator!r} or upsampler {upsampler!r} holds a different number of"
                f" parameters than its num_params() says ({self.num_params} vs {self.plan.total})"
            )

    def _init_scales(self) -> None:
        """Scales every layer so that its generated weight starts with its default-init std."""
        with torch.no_grad():
            raw = self._generate()
            target = torch.tensor(
                [math.sqrt(s.default_var) for s in self._specs], dtype=torch.float64
            )
            rms = torch.stack([w.double().pow(2).mean().sqrt() for w in raw]).cpu()
            self.scales.copy_(target / rms.clamp_min(1e-30))
            self._swapper.install(self._generate())

    # -- generation -------------------------------------------------------------------------

    def _generate(self) -> list[Tensor]:
        """Every layer's weight, produced store by store in one pass."""
        self.generations += 1
        weights: dict[int, Tensor] = {}
        for k, store in enumerate(self.plan.stores):
            make = self._resized if store.resize else self._windows
            for j, w in zip(store.layers, make(k, store), strict=True):
                weights[j] = w.view(self._specs[j].shape)
        return [weights[j] for j in range(len(self._specs))]  # every layer is in one store

    def _generator(self, k: int) -> Generator:
        """Store ``k``'s generator (``nn.ModuleList`` is not generic: it types a Module)."""
        return cast(Generator, self.generators[k])

    def _windows(self, k: int, store: StorePlan) -> list[Tensor]:
        theta = self.stores[k]
        generator = self._generator(k)
        upsampler = self.upsamplers[k]
        coefs = generator.coefficients()
        direct: list[Tensor] = []  # scaled coefficients of the layers served without upsampling
        for j, c, up, coef in zip(
            store.layers, store.templates, store.upsampled, coefs, strict=True
        ):
            if up:
                continue
            if coef is None and c != 1:
                raise NpasError(
                    f"generator {self.generator_name!r} gave no coefficients for a layer with"
                    f" {c} templates"
                )
            direct.append(self.scales[j : j + 1] if coef is None else coef * self.scales[j])
        combined = iter(Combine.apply(theta, self._layouts[k], *direct) if direct else ())
        out, n_up = [], 0
        for j, up, start in zip(store.layers, store.upsampled, store.starts, strict=True):
            if up:
                source = theta.roll(-start) if start else theta
                out.append(upsampler(n_up, source) * self.scales[j])
                n_up += 1
            else:
                out.append(next(combined))
        return out

    def _resized(self, k: int, store: StorePlan) -> list[Tensor]:
        """The probe's weights: templates mixed per layer, resized to it, and multiplied by a
        fixed random sign per weight. A template of ~100 values stretched over thousands of
        weights is smooth, so neighbouring filters are near copies and activations add up
        coherently (a depth-4 MNIST ConvNet's probe: logits near 20 at init, then NaN); random
        signs keep each weight's size and make the sums add like independent ones."""
        templates = self.stores[k].view(PROBE_TEMPLATES, -1)
        scaled = []
        for c, j in zip(self._generator(k).coefficients(), store.layers, strict=True):
            assert c is not None  # a probe's layer has PROBE_TEMPLATES > 1 templates to mix
            scaled.append(c * self.scales[j])
        alphas = torch.stack(scaled)
        mixed = alphas @ templates  # resizing is linear: mix first, then resize once per layer
        signs = getattr(self, f"probe_signs_{k}").split(list(store.numels))
        return [
            resize(mixed[i : i + 1], n).view(n) * sign
            for i, (n, sign) in enumerate(zip(store.numels, signs, strict=True))
        ]

    def _key(self) -> tuple:
        tensors = [
            *self.stores,
            *self.generators.parameters(),
            *self.generators.buffers(),
            *self.upsamplers.parameters(),
            self.scales,
        ]
        return tuple((t.data_ptr(), _compat.version_of(t), t.device) for t in tensors)

    def _weights(self) -> list[Tensor]:
        if self.training or torch.is_grad_enabled():
            self._cache = None
            return self._generate()
        key = self._key()
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._generate())
        return self._cache[1]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Generates the weights (or reuses the eval cache), then runs the model."""
        weights = self._weights()
        self._swapper.install(weights)
        try:
            return self.model(*args, **kwargs)
        finally:
            if any(w.requires_grad for w in weights):  # leave graph-free tensors behind
                self._swapper.install([w.detach() for w in weights])

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> ShapeshiftNet:
        out = super()._apply(fn, recurse)
        self._cache = None
        with torch.no_grad():  # the installed tensors are not buffers: refresh them
            self._swapper.install(self._generate())
        return out

    # -- results and introspection ------------------------------------------------------------

    def materialize(self) -> nn.Module:
        """A plain copy of the original model (same class) holding the generated weights.

        Its outputs equal this network's, it has the original parameter count, and running it
        costs nothing extra; use it for deployment or for fine-tuning without sharing.
        """
        with torch.no_grad():
            weights = self._generate()
        plain = copy.deepcopy(self.model)
        restore_parameters(plain, self._specs, weights, self._swapper.param_order)
        return plain

    def coefficients(self) -> list[Tensor]:
        """Per layer, the current template coefficients (a single 1.0 for one template)."""
        out: list[Tensor] = [torch.ones(1)] * len(self._specs)
        with torch.no_grad():
            for k, store in enumerate(self.plan.stores):
                for j, coef in zip(store.layers, self._generator(k).coefficients(), strict=True):
                    out[j] = torch.ones(1) if coef is None else coef.detach().clone()
        return out

    @property
    def num_params(self) -> int:
        """Trainable parameters of this module, everything included (what the budget bounds)."""
        return _trainable(self)

    @property
    def num_store_params(self) -> int:
        """Parameters in the stores alone."""
        return sum(p.numel() for p in self.stores)

    def table(self) -> str:
        """A markdown table of the generated layers, for reports."""
        rows = [
            "| layer | shape | weights | store | templates | upsampled |",
            "|---|---|---:|---:|---:|---|",
        ]
        rows += [
            f"| {i.name} | {'x'.join(map(str, i.shape))} | {i.numel} | {i.store} |"
            f" {i.templates} | {'yes' if i.upsampled else 'no'} |"
            for i in self.layers
        ]
        return "\n".join(rows)

    def extra_repr(self) -> str:
        return (
            f"budget={self.budget}, params={self.num_params}, stores="
            f"{[p.numel() for p in self.stores]}, generator={self.generator_name!r},"
            f" upsampler={self.upsampler_name!r}"
        )


def _planner(
    model: nn.Module,
    specs: list[LayerSpec],
    assignment: list[int],
    options: SSNOptions,
    *,
    probe: bool = False,
) -> Planner:
    """The store sizing of ``model`` (its ``specs`` not yet taken over): what a network solves
    for its budget and :func:`minimum_budget` reports the smallest total of."""
    gen_cls = GENERATORS.get(options.generator)
    ups_cls = UPSAMPLERS.get(options.upsampler)
    gen_opts, ups_opts = options.gen_options, options.ups_options
    return Planner(
        [s.numel for s in specs],
        assignment,
        fixed=_trainable(model) - sum(s.numel for s in specs),  # norms, biases, the rest
        limit=options.templates,
        max_templates=gen_cls.max_templates,
        count_generator=lambda t: gen_cls.num_params(t, **gen_opts),
        count_upsampler=lambda p: ups_cls.num_params(p, **ups_opts),
        resize=probe,
    )


def shapeshift(
    model: nn.Module,
    budget: int,
    *,
    pretrain: Callable[[nn.Module], object] | None = None,
    **options: Any,
) -> ShapeshiftNet:
    """Turns ``model`` into a Shapeshifter Network with exactly ``budget`` or fewer parameters.

    The caller's model is not modified. Supported weights (Linear, Conv, GRU/LSTM/RNN matrices,
    MultiheadAttention projections) are generated from ``stores`` parameter stores whose sizes
    are solved so that the returned module's trainable parameters - stores, coefficients,
    masks, and everything the model keeps (norms, biases) - fall within 90-100 % of ``budget``.
    Budgets above the plain model's count work too (extra capacity, paper's SSN+).

    Args:
        model: Any module containing supported layers.
        budget: Total trainable parameters of the result.
        pretrain: ``fn(net)`` that trains the given module briefly; required by ``"auto"``.
        **options: The fields of :class:`SSNOptions` (their defaults and meaning are there):
            ``stores``, ``mapping``, ``generator``, ``upsampler``, ``templates``, ``seed``,
            ``generator_options``, ``upsampler_options``.

    Raises:
        BudgetError: The budget is too small (the message states the minimum) or, for a
            generator that cannot use extra capacity, too large.
        ConfigError: Bad arguments, or a model without supported layers.
        UnknownNameError: Unknown generator, upsampler or mapping name (lists the known ones).

    Example:
        >>> net = shapeshift(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)), 120)
        >>> net.num_params <= 120
        True
    """
    budget = check_int("budget", budget)
    opts = options_of(SSNOptions, options, "Shapeshifting")
    _, chosen = _assignment(model, budget, opts, pretrain=pretrain)
    return ShapeshiftNet(model, budget, assignment=chosen, options=opts)


def minimum_budget(model: nn.Module, **options: Any) -> int:
    """The smallest budget :func:`shapeshift` meets with these options (the minimum its
    ``BudgetError`` states), found without building the network: a search checks its budget
    range against it in milliseconds.

    ``mapping="auto"`` is refused: its assignment needs a trained probe network (``"random"``
    with the same ``stores`` gives stores of the same count).

    Raises:
        BudgetError: No store size uses every store parameter of this model.
        ConfigError, UnknownNameError: As :func:`shapeshift`.
    """
    return _untrained_planner(model, options).minimum()


def check_budget(model: nn.Module, budget: int, **options: Any) -> int:
    """Raises the ``BudgetError`` :func:`shapeshift` raises for ``budget`` (below the minimum,
    or more than the generator uses), without building the network: a search checks the
    points it is asked to train first in milliseconds. ``mapping="auto"`` is refused as by
    :func:`minimum_budget`.

    Returns:
        The trainable parameters the network :func:`shapeshift` builds would have (its
        ``num_params``: 90-100 % of ``budget``, not the budget itself).
    """
    opts = options_of(SSNOptions, options, "Shapeshifting")
    planner = _untrained_planner(model, options)
    return planner.solve(budget, what=_what(opts, planner)).total


def _untrained_planner(model: nn.Module, options: dict[str, Any]) -> Planner:
    """The planner of a mapping decided before training (every one but ``auto``)."""
    opts = options_of(SSNOptions, options, "Shapeshifting")
    if opts.mapping == "auto":
        raise ConfigError(
            "mapping='auto' assigns stores from a trained probe network, so it has no minimum "
            "budget before training; allowed: 'random' with the same stores as a stand-in"
        )
    specs, chosen = _assignment(model, None, opts, pretrain=None)
    return _planner(model, specs, chosen, opts)


def _what(options: SSNOptions, planner: Planner) -> str:
    """The Shapeshifting a budget error names."""
    return (
        f"generator={options.generator!r}, upsampler={options.upsampler!r}, "
        f"{len(planner.groups)} store(s)"
    )


def _assignment(
    model: nn.Module,
    budget: int | None,
    options: SSNOptions,
    *,
    pretrain: Callable[[nn.Module], object] | None,
) -> tuple[list[LayerSpec], list[int]]:
    """The layers of ``model`` and the store of each, as ``mapping`` assigns them (``budget``
    sizes the probe network a trained mapping builds; None: there is none to build)."""
    mapping = options.mapping
    gen_cls = GENERATORS.get(options.generator)
    UPSAMPLERS.get(options.upsampler)
    if isinstance(mapping, Mapping):
        map_fn, assignment = MAPPINGS.get("manual"), dict(mapping)
    else:
        map_fn, assignment = MAPPINGS.get(mapping), None
    if pretrain is not None and (assignment is not None or mapping in {"single", "random"}):
        raise ConfigError("pretrain is only used by mapping='auto'")
    specs = find_layers(model)
    if not specs:
        raise ConfigError(f"model {type(model).__name__} has no trainable {SUPPORTED} weight")
    learned = gen_cls.num_params([PROBE_TEMPLATES] * len(specs), **options.gen_options) > 0

    def probe() -> ShapeshiftNet:
        if budget is None:
            raise ConfigError(f"mapping {mapping!r} trains a probe network: no minimum budget")
        kept: dict[str, Any] = {
            "generator": options.generator,
            "generator_options": options.generator_options,
        }
        probe_options = SSNOptions(
            **(kept if learned else {}), upsampler="inter", templates=PROBE_TEMPLATES,
            seed=options.seed,
        )  # fmt: skip
        return ShapeshiftNet(model, budget, assignment=[0] * len(specs), options=probe_options,
                             probe=True)  # fmt: skip

    ctx = MappingContext(
        names=[s.name for s in specs],
        modules=[s.slots[0].module for s in specs],
        numels=[s.numel for s in specs],
        stores=options.stores,
        seed=options.seed,
        assignment=assignment,
        pretrain=pretrain,
        probe=probe,
    )
    chosen = [int(s) for s in map_fn(ctx)]
    used = sorted(set(chosen))
    if len(chosen) != len(specs) or used != list(range(len(used))):
        raise ConfigError(
            f"mapping {mapping!r} must give each of the {len(specs)} layers a store and use"
            f" stores 0..k-1 without gaps; got {chosen}"
        )
    return specs, chosen
