"""Shapeshifter Networks: layer coverage, generators, upsamplers, mappings, budget, caching."""

from __future__ import annotations

import copy
import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from spaces import BudgetError, ConfigError, UnknownNameError
from spaces.ssn import (
    GENERATORS,
    MAPPINGS,
    UPSAMPLERS,
    Generator,
    ShapeshiftNet,
    check_budget,
    minimum_budget,
    shapeshift,
)


class SharpCosSim(nn.Conv2d):
    """A Sharpened-Cosine-Similarity-style layer: a Conv2d subclass that reads self.weight."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight / self.weight.flatten(1).norm(dim=1).view(-1, 1, 1, 1)
        out = F.conv2d(x, w, None, self.stride, self.padding, self.dilation, self.groups)
        norm = F.conv2d(x.pow(2), torch.ones_like(w[:1, :1]).expand(1, *w.shape[1:]) / 1.0,
                        None, self.stride, self.padding, self.dilation).clamp_min(1e-6).sqrt()
        return out / norm


class ConvNet(nn.Module):
    """Convolutions with stride, groups, dilation, a Conv1d path and an SCS layer."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 12, 3, padding=1)
        self.bn = nn.BatchNorm2d(12)
        self.c2 = nn.Conv2d(12, 12, 3, stride=2, padding=2, dilation=2, groups=3, bias=False)
        self.scs = SharpCosSim(12, 8, 3, padding=1, bias=False)
        self.c1d = nn.Conv1d(8, 6, 3, padding=1, groups=2)
        self.head = nn.Linear(6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.bn(self.c1(x)))
        h = torch.tanh(self.scs(torch.tanh(self.c2(h))))
        h = torch.tanh(self.c1d(h.flatten(2)))
        return self.head(h.mean(-1))


class SeqNet(nn.Module):
    """GRU and LSTM (2 layers, bidirectional), packed and separate-kdim attention, Conv1d."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 16)
        self.gru = nn.GRU(16, 12, num_layers=2, bidirectional=True, batch_first=True)
        self.lstm = nn.LSTM(24, 10, num_layers=2, bidirectional=True, batch_first=True)
        self.att = nn.MultiheadAttention(20, 4, batch_first=True)
        self.cross = nn.MultiheadAttention(20, 2, kdim=8, vdim=6, batch_first=True)
        self.k = nn.Linear(20, 8)
        self.v = nn.Linear(20, 6)
        self.head = nn.Linear(20, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(torch.tanh(self.inp(x)))
        h, _ = self.lstm(h)
        a, _ = self.att(h, h, h)
        a, _ = self.cross(a, self.k(a), self.v(a))
        return self.head(a.mean(1))


class Twice(nn.Module):
    """Calls the same Linear twice in one forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(10, 10)
        self.b = nn.Linear(10, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.a(torch.tanh(self.a(x)))))


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 32), nn.LayerNorm(32), nn.Tanh(),
        nn.Linear(32, 24), nn.Tanh(), nn.Linear(24, 5),
    )


def count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def backward(net: nn.Module, x: torch.Tensor) -> None:
    out = net(x)
    (out * torch.randn_like(out)).sum().backward()


def assert_store_grads_nonzero(net: ShapeshiftNet) -> None:
    for i, store in enumerate(net.stores):
        assert store.grad is not None, f"store {i} got no gradient"
        dead = int((store.grad == 0).sum())
        assert dead == 0, f"store {i}: {dead} of {store.numel()} parameters got no gradient"


def assert_materialized_equal(net: ShapeshiftNet, model: nn.Module, x: torch.Tensor) -> None:
    plain = net.materialize()
    assert type(plain) is type(model)
    assert count(plain) == count(model)
    assert [n for n, _ in plain.named_parameters()] == [n for n, _ in model.named_parameters()]
    net.eval()
    plain.eval()
    with torch.no_grad():
        assert (net(x) - plain(x)).abs().max().item() < 1e-5


def within_budget(net: ShapeshiftNet, budget: int) -> None:
    assert net.num_params == sum(p.numel() for p in net.parameters())
    assert 0.9 * budget <= net.num_params <= budget


def assert_a_sound_ssn(
    net: ShapeshiftNet, model: nn.Module, x: torch.Tensor, *, budget: int
) -> None:
    """Within its budget, every store parameter gets a gradient, and it materialises equal."""
    within_budget(net, budget)
    backward(net, x)
    assert_store_grads_nonzero(net)
    assert_materialized_equal(net, model, x)


X_IMG = torch.randn(4, 3, 9, 9, generator=torch.Generator().manual_seed(1))
X_SEQ = torch.randn(3, 5, 6, generator=torch.Generator().manual_seed(2))
X_VEC = torch.randn(8, 12, generator=torch.Generator().manual_seed(3))


# -- layers --------------------------------------------------------------------------------------


def test_takes_over_every_supported_weight_and_keeps_norms_and_biases() -> None:
    model = SeqNet()
    net = shapeshift(model, count(model) // 5, generator="wavg")
    rnn = [f"{m}.weight_{k}_l{i}{s}" for m in ("gru", "lstm") for i in (0, 1)
           for s in ("", "_reverse") for k in ("ih", "hh")]
    expected = {"inp.weight", *rnn, "att.in_proj_weight", "att.out_proj.weight",
                "cross.q_proj_weight", "cross.k_proj_weight", "cross.v_proj_weight",
                "cross.out_proj.weight", "k.weight", "v.weight", "head.weight"}
    assert set(net.mapping) == expected
    kept = {n for n, _ in net.model.named_parameters()}
    assert kept.isdisjoint(expected)
    assert "gru.bias_ih_l0_reverse" in kept and "att.in_proj_bias" in kept
    assert_a_sound_ssn(net, model, X_SEQ, budget=count(model) // 5)


def test_rnn_and_attention_really_use_the_generated_weights() -> None:
    model = SeqNet()
    net = shapeshift(model, count(model)).eval()
    with torch.no_grad():
        before = net(X_SEQ)
        net.stores[0].mul_(1.5)
        after = net(X_SEQ)
    assert not torch.allclose(before, after)
    with torch.no_grad():
        assert torch.allclose(after, net.materialize().eval()(X_SEQ), atol=1e-6)


def test_conv_variants_and_conv_subclass() -> None:
    torch.manual_seed(0)
    model = ConvNet()
    budget = count(model) // 3
    net = shapeshift(model, budget)
    assert {"c1.weight", "c2.weight", "scs.weight", "c1d.weight", "head.weight"} == set(
        net.mapping
    )
    assert_a_sound_ssn(net, model, X_IMG, budget=budget)


def test_caller_model_is_not_modified() -> None:
    model = mlp()
    state = copy.deepcopy(model.state_dict())
    params = list(model.parameters())
    net = shapeshift(model, count(model) // 4)
    backward(net, X_VEC)
    assert list(model.parameters()) == params
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert isinstance(model[0].weight, nn.Parameter)


def test_model_without_supported_layers_is_refused() -> None:
    model = nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4))
    with pytest.raises(ValueError, match="no trainable Linear, Conv"):
        shapeshift(model, 100)


def test_tied_supported_weights_are_one_layer_and_embedding_ties_stay() -> None:
    model = Twice()
    model.b.weight = nn.Parameter(torch.randn(4, 10))
    tied = nn.ModuleDict({"x": model, "y": nn.Linear(10, 4)})
    tied["y"].weight = model.b.weight
    net = shapeshift(tied, count(tied))
    assert set(net.mapping) == {"x.a.weight", "x.b.weight"}
    assert net.model["x"].b.weight is net.model["y"].weight
    emb = nn.Embedding(4, 10)
    dec = nn.Linear(10, 4, bias=False)
    dec.weight = emb.weight
    both = nn.ModuleDict({"emb": emb, "dec": dec, "mid": nn.Linear(10, 10)})
    net = shapeshift(both, count(both))
    assert set(net.mapping) == {"mid.weight"}


# -- generators and upsamplers --------------------------------------------------------------------


@pytest.mark.parametrize("generator", GENERATORS.names())
def test_each_generator_trains_every_store_parameter(generator: str) -> None:
    model = mlp()
    for budget in (count(model) // 2, count(model)):
        net = shapeshift(model, budget, generator=generator)
        within_budget(net, budget)
        backward(net, X_VEC)
        assert_store_grads_nonzero(net)
        for name, p in net.generators.named_parameters():
            if p.numel():
                assert p.grad is not None and p.grad.abs().sum() > 0, name
        assert_materialized_equal(net, model, X_VEC)


def test_generators_combine_templates_as_documented() -> None:
    model = mlp()
    net = shapeshift(model, count(model) * 2, generator="wavg")
    assert any(info.templates > 1 for info in net.layers)
    for info, coef in zip(net.layers, net.coefficients(), strict=True):
        assert coef.numel() == info.templates
    avg = shapeshift(model, count(model) * 2, generator="avg")
    multi = [c for c in avg.coefficients() if c.numel() > 1]
    assert multi and all(torch.allclose(c, torch.full_like(c, 1 / c.numel())) for c in multi)
    emb = shapeshift(model, count(model) * 2, generator="emb", generator_options={"dim": 7})
    assert emb.generators[0].embedding.shape[1] == 7
    assert all(torch.isclose(c.sum(), torch.tensor(1.0)) for c in emb.coefficients())
    rr = shapeshift(model, count(model), generator="rr")
    assert all(info.templates == 1 for info in rr.layers)


def test_coefficients_start_orthogonal_across_the_layers_of_a_store() -> None:
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(3)])
    net = shapeshift(model, 4 * count(model), generator="wavg", templates=4)
    alphas = torch.stack(net.coefficients())  # 3 layers x 4+ templates
    gram = alphas @ alphas.T
    assert torch.allclose(gram, torch.eye(3), atol=1e-5)
    emb = shapeshift(model, 4 * count(model), generator="emb")
    e = emb.generators[0].embedding
    assert torch.allclose(e @ e.T, torch.eye(3), atol=1e-5)


@pytest.mark.parametrize("upsampler", UPSAMPLERS.names())
def test_each_upsampler_serves_layers_larger_than_the_store(upsampler: str) -> None:
    torch.manual_seed(0)
    model = ConvNet()
    budget = count(model) // 6
    net = shapeshift(model, budget, upsampler=upsampler)
    assert sum(info.upsampled for info in net.layers) >= 2
    assert_a_sound_ssn(net, model, X_IMG, budget=budget)
    masks = sum(p.numel() for p in net.upsamplers.parameters())
    size = net.num_store_params
    expected = sum((math.ceil(i.numel / size) - 1) * 9 for i in net.layers if i.upsampled)
    assert masks == (expected if upsampler == "mask" else 0)


@pytest.mark.parametrize("upsampler", UPSAMPLERS.names())
def test_upsampled_layers_do_not_start_from_the_same_values(upsampler: str) -> None:
    model = nn.Sequential(nn.Linear(20, 20, bias=False), nn.Linear(20, 20, bias=False))
    net = shapeshift(model, 250, upsampler=upsampler)
    assert all(info.upsampled for info in net.layers)
    w0, w1 = (net.model[i].weight.flatten() for i in range(2))
    n = net.num_store_params
    assert not torch.allclose(w0[:n], w1[:n])
    assert abs(F.cosine_similarity(w0, w1, dim=0)) < 0.5


@pytest.mark.parametrize(
    ("generator", "upsampler", "fraction"),
    [("wavg", "mask", 0.1), ("emb", "inter", 0.3), ("avg", "repeat", 1.0), ("wavg", "mask", 3.0),
     ("rr", "mask", 0.5)],
)
def test_generated_weights_start_with_the_default_init_variance(
    generator: str, upsampler: str, fraction: float
) -> None:
    model = SeqNet()
    net = shapeshift(model, int(count(model) * fraction), generator=generator,
                     upsampler=upsampler)
    fresh = copy.deepcopy(model)
    for name in net.mapping:
        mod_name, attr = name.rsplit(".", 1)
        generated = getattr(net.model.get_submodule(mod_name), attr)
        module = fresh.get_submodule(mod_name)
        draws = []
        for _ in range(20):  # PyTorch's own init for this module, drawn again
            (module._reset_parameters if hasattr(module, "_reset_parameters")
             else module.reset_parameters)()
            draws.append(getattr(module, attr).detach().var())
        ratio = generated.var().item() / torch.stack(draws).mean().item()
        assert 0.5 < ratio < 2.0, (name, ratio)


def test_user_registered_generator_is_used() -> None:
    name = "test-neg-avg"
    if name not in GENERATORS:

        @GENERATORS.register(name)
        class NegAvg(Generator):
            @classmethod
            def num_params(cls, templates: list[int], **options: object) -> int:
                return 0

            def coefficients(self) -> list[torch.Tensor | None]:
                return [None if c == 1 else -torch.ones(c) / c for c in self.templates]

    model = mlp()
    net = shapeshift(model, count(model) * 2, generator=name)
    assert any(c.sum() < 0 for c in net.coefficients())
    assert_materialized_equal(net, model, X_VEC)


# -- budget --------------------------------------------------------------------------------------


def test_too_small_budget_states_the_minimum_which_then_works() -> None:
    model = ConvNet()
    with pytest.raises(BudgetError, match=r"minimum budget is \d+") as info:
        shapeshift(model, 40)
    assert isinstance(info.value, ValueError)
    minimum = int(re.search(r"minimum budget is (\d+)", str(info.value)).group(1))
    net = shapeshift(model, minimum)
    assert net.num_params <= minimum
    with pytest.raises(BudgetError):
        shapeshift(model, minimum - 1)


@pytest.mark.parametrize(
    ("stores", "mapping", "generator", "upsampler"),
    [(1, "single", "wavg", "mask"), (2, "random", "emb", "inter"), (3, "random", "avg", "repeat")],
)
def test_minimum_budget_is_the_minimum_shapeshift_states(stores, mapping, generator, upsampler):
    model = ConvNet()
    options = dict(stores=stores, mapping=mapping, generator=generator, upsampler=upsampler)
    minimum = minimum_budget(model, **options)
    with pytest.raises(BudgetError, match=f"minimum budget is {minimum}$"):
        shapeshift(model, minimum - 1, **options)
    assert shapeshift(model, minimum, **options).num_params <= minimum


def _record_layout() -> nn.Module:
    """The 997-parameter record's layout at widths 8 and 12 (round 5's start point 5)."""
    from spaces import build_model

    return build_model("sepnet", (1, 28, 28), 10, stem=8, stages=1, blocks=4, width=12,
                       growth=1.0, padding="valid")  # fmt: skip


@pytest.mark.parametrize(
    ("make", "options", "budgets"),
    [
        (ConvNet, {"generator": "wavg", "upsampler": "mask"}, (500, 1500)),
        (_record_layout, {"generator": "emb", "upsampler": "inter", "templates": 4}, (440, 480)),
    ],
    ids=["convnet-wavg-mask", "record-emb-inter"],
)
def test_check_budget_refuses_exactly_what_shapeshift_refuses(make, options, budgets) -> None:
    """Below the minimum, or more than the generator uses (one emb store of this layout
    uses at most 447), with shapeshift's own message; the budgets between pass both."""
    model, options = make(), {"mapping": "single", **options}
    minimum = minimum_budget(model, **options)
    refused = []
    for budget in (minimum - 1, minimum, *budgets):
        try:
            shapeshift(model, budget, **options)
        except BudgetError as err:
            refused.append(budget)
            with pytest.raises(BudgetError) as checked:
                check_budget(model, budget, **options)
            assert str(checked.value) == str(err)
        else:  # and counts the network shapeshift builds, not the budget asked
            net = shapeshift(model, budget, **options)
            assert check_budget(model, budget, **options) == net.num_params
    assert refused == ([minimum - 1, 480] if options["generator"] == "emb" else [minimum - 1])


def test_minimum_budget_refuses_auto_which_needs_training() -> None:
    with pytest.raises(ConfigError, match="'random' with the same stores"):
        minimum_budget(ConvNet(), stores=2, mapping="auto")


def test_round_robin_refuses_capacity_it_cannot_use() -> None:
    model = mlp()
    with pytest.raises(BudgetError, match="maximum budget is"):
        shapeshift(model, 3 * count(model), generator="rr")


def test_capacity_mode_raises_the_template_count_so_nothing_is_idle() -> None:
    model = nn.Sequential(nn.Linear(10, 10))
    budget = 20 * count(model)
    net = shapeshift(model, budget, templates=4)
    assert net.template_limits[0] > 4
    assert net.layers[0].templates * 100 >= net.num_store_params
    within_budget(net, budget)
    backward(net, torch.randn(5, 10))
    assert_store_grads_nonzero(net)


def test_bad_arguments_name_what_is_allowed() -> None:
    model = mlp()
    for kwargs in ({"generator": "nope"}, {"upsampler": "nope"}, {"mapping": "nope"}):
        with pytest.raises(UnknownNameError, match="known: "):
            shapeshift(model, 500, **kwargs)
    with pytest.raises(UnknownNameError, match=r"'bogus'; known: avg, emb, rr, .*wavg"):
        shapeshift(model, 500, generator="bogus")
    with pytest.raises(ConfigError, match="budget must be an int >= 1, got 0"):
        shapeshift(model, 0)
    with pytest.raises(ConfigError, match=r"unknown Shapeshifting option 'store'.*'stores'"):
        shapeshift(model, 500, store=2)
    with pytest.raises(ConfigError, match="stores=2 with mapping='single'"):
        shapeshift(model, 500, stores=2)
    with pytest.raises(ConfigError, match="pretrain is only used"):
        shapeshift(model, 500, pretrain=lambda net: None)
    assert {"single", "manual", "random", "auto"} <= set(MAPPINGS)
    assert {"mask", "repeat", "inter"} <= set(UPSAMPLERS)


# -- determinism, state, caching, devices ---------------------------------------------------------


def test_same_seed_same_module_and_state_dict_round_trip() -> None:
    model = SeqNet()
    kwargs = {"stores": 2, "mapping": "random", "generator": "emb", "seed": 3}
    a = shapeshift(model, count(model) // 3, **kwargs)
    b = shapeshift(model, count(model) // 3, **kwargs)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    c = shapeshift(model, count(model) // 3, **{**kwargs, "seed": 4})
    assert not torch.equal(c.stores[0], a.stores[0])
    opt = torch.optim.SGD(a.parameters(), lr=0.1)
    backward(a, X_SEQ)
    opt.step()
    b.load_state_dict(a.state_dict())
    a.eval()
    b.eval()
    with torch.no_grad():
        assert torch.equal(a(X_SEQ), b(X_SEQ))


def test_module_called_twice_is_generated_once_per_forward() -> None:
    model = Twice()
    net = shapeshift(model, count(model) // 2)
    start = net.generations
    backward(net, torch.randn(3, 10))
    assert net.generations == start + 1
    assert_materialized_equal(net, model, torch.randn(3, 10))


def test_eval_cache_regenerates_only_after_parameters_change() -> None:
    model = mlp()
    net = shapeshift(model, count(model) // 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    net.eval()
    with torch.no_grad():
        first = net(X_VEC)
        start = net.generations
        assert torch.equal(net(X_VEC), first)
        assert torch.equal(net(X_VEC), first)
    assert net.generations == start
    net.train()
    backward(net, X_VEC)
    assert net.generations == start + 1
    opt.step()
    net.eval()
    with torch.no_grad():
        changed = net(X_VEC)
        assert net.generations == start + 2
        net(X_VEC)
    assert net.generations == start + 2
    assert not torch.equal(changed, first)
    net(X_VEC)  # eval with grad enabled needs a graph: regenerates
    assert net.generations == start + 3


def test_dtype_conversion_and_deepcopy_after_forward() -> None:
    model = ConvNet()
    net = shapeshift(model, count(model) // 2)
    backward(net, X_IMG)
    clone = copy.deepcopy(net)
    net = net.double().eval()
    assert all(p.dtype == torch.float64 for p in net.parameters())
    with torch.no_grad():
        out = net(X_IMG.double())
        assert torch.allclose(out, net.materialize()(X_IMG.double()), atol=1e-10)
    clone.eval()
    with torch.no_grad():
        assert torch.allclose(clone(X_IMG), out.float(), atol=1e-5)
        clone.stores[0].mul_(-1.0)  # the clone generates into its own modules only
        assert not torch.allclose(clone(X_IMG), out.float(), atol=1e-5)
        assert torch.equal(net(X_IMG.double()), out)


DEVICES = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


@pytest.mark.parametrize("device", DEVICES)
def test_device_move_keeps_everything_together_and_matches_materialized(device: str) -> None:
    model = SeqNet()
    net = shapeshift(model, count(model) // 4).to(device)
    x = X_SEQ.to(device)
    backward(net, x)
    assert_store_grads_nonzero(net)
    plain = net.materialize()
    assert all(p.device.type == device for p in plain.parameters())
    net.eval()
    with torch.no_grad():
        assert (net(x) - plain.eval()(x)).abs().max().item() < 1e-5


def test_introspection_table() -> None:
    model = ConvNet()
    net = shapeshift(model, count(model) // 4)
    assert net.budget == count(model) // 4
    assert net.plain_params == count(model)
    assert net.num_store_params == sum(p.numel() for p in net.stores)
    table = net.table()
    assert table.count("\n") == len(net.layers) + 1
    assert "| c2.weight | 12x4x3x3 | 432 | 0 |" in table
    assert "budget=" in repr(net)


# -- mappings ----------------------------------------------------------------------------


def _pretrain(net: nn.Module) -> None:
    """Three Adam steps on SeqNet inputs: what the auto mapping clusters the layers after."""
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(3):
        opt.zero_grad()
        net(X_SEQ).pow(2).mean().backward()
        opt.step()


#: The shapeshift arguments each registered mapping needs on SeqNet.
MAPPING_OPTIONS: dict[str, dict] = {
    "auto": {"mapping": "auto", "stores": 2, "pretrain": _pretrain},
    "manual": {"mapping": {"gru": 1, "lstm": 1, "*": 0}, "stores": 2},
    "random": {"mapping": "random", "stores": 2},
    "single": {"mapping": "single"},
}


def test_every_mapping_has_options() -> None:
    assert sorted(MAPPING_OPTIONS) == MAPPINGS.names(), "a new mapping needs its options here"


@pytest.mark.parametrize("name", MAPPINGS.names())
def test_each_mapping_fills_every_store_within_budget(name: str) -> None:
    torch.manual_seed(0)
    model = SeqNet()
    options = MAPPING_OPTIONS[name]
    budget = count(model) // 2
    net = shapeshift(model, budget, **options)
    assert set(net.mapping.values()) == set(range(options.get("stores", 1)))
    assert_a_sound_ssn(net, model, X_SEQ, budget=budget)


def test_manual_mapping_by_module_name_and_glob() -> None:
    model = SeqNet()
    assignment = {"gru": 1, "lstm.weight_*": 2, "att": 1, "*": 0}
    net = shapeshift(model, count(model) // 2, stores=3, mapping=assignment)
    assert net.mapping["gru.weight_hh_l1_reverse"] == 1
    assert net.mapping["lstm.weight_ih_l0"] == 2
    assert net.mapping["att.in_proj_weight"] == 1
    assert net.mapping["att.out_proj.weight"] == 0 and net.mapping["head.weight"] == 0
    sizes = [sum(i.numel for i in net.layers if i.store == k) for k in range(3)]
    total = sum(sizes)
    for k in range(3):  # stores sized in proportion to their layers' weights
        assert abs(net.stores[k].numel() / net.num_store_params - sizes[k] / total) < 0.01
    assert_a_sound_ssn(net, model, X_SEQ, budget=count(model) // 2)


def test_manual_mapping_errors() -> None:
    model = mlp()
    with pytest.raises(ConfigError, match=r"no store given for layers \['5.weight', '7.weight'\]"):
        shapeshift(model, 900, stores=2, mapping={"0": 0, "2": 1})
    with pytest.raises(ConfigError, match="pass stores="):
        shapeshift(model, 900, mapping={"*": 1})
    with pytest.raises(ConfigError, match="needs the assignment"):
        shapeshift(model, 900, mapping="manual")


def test_random_mapping_is_seeded_and_fills_every_store() -> None:
    model = SeqNet()
    nets = [shapeshift(model, count(model) // 2, stores=4, mapping="random", seed=s)
            for s in (0, 0, 1)]
    assert nets[0].mapping == nets[1].mapping != nets[2].mapping
    assert set(nets[0].mapping.values()) == {0, 1, 2, 3}
    with pytest.raises(ConfigError, match="only 4 generated layers"):
        shapeshift(mlp(), 900, stores=5, mapping="random")


def test_auto_mapping_pretrains_a_probe_then_clusters() -> None:
    model = SeqNet()
    seen: list[ShapeshiftNet] = []

    def pretrain(net: nn.Module) -> None:
        seen.append(net)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            net(X_SEQ).pow(2).mean().backward()
            opt.step()

    budget = count(model) // 3
    net = shapeshift(model, budget, stores=3, mapping="auto", pretrain=pretrain)
    (probe,) = seen
    assert isinstance(probe, ShapeshiftNet) and len(probe.stores) == 1
    assert all(i.templates == 4 for i in probe.layers) and probe.upsampler_name == "inter"
    probe_grads = probe.stores[0].grad
    assert probe_grads is not None and int((probe_grads == 0).sum()) == 0
    assert set(net.mapping.values()) == {0, 1, 2}
    assert len(net.stores) == 3
    within_budget(net, budget)
    backward(net, X_SEQ)
    assert_store_grads_nonzero(net)
    with pytest.raises(ConfigError, match="needs pretrain="):
        shapeshift(model, budget, stores=3, mapping="auto")
    again = shapeshift(model, budget, stores=3, mapping=net.mapping)
    assert again.mapping == net.mapping
