"""port_diff.compare: names the first layer of a port that diverges, and nothing else.

The clean case is the handbook's GPT against Hugging Face's GPT-2 with copied weights (as
tests/snippets/test_resnorm.py checks it end to end); the planted mistakes are those
of the pitfalls page: a wrong eps in one LayerNorm, and a (1 + w) weight loaded as w.
"""

from __future__ import annotations

import re

import pytest
import torch
import transformers
from torch import nn
from torch.nn import functional as F

from snippets.port_diff import TOLERANCE_FACTOR, Report, compare, default_tolerance
from snippets.resnorm import GPT, GPTConfig

RULES = [  # Hugging Face GPT-2's names -> the handbook GPT's, applied in this order
    ("ln_1", "attn.norm_in"),
    ("attn.c_attn", "attn.sublayer.qkv"),
    ("attn.c_proj", "attn.sublayer.proj"),
    ("ln_2", "mlp.norm_in"),
    ("mlp.c_fc", "mlp.sublayer.fc"),
    ("mlp.c_proj", "mlp.sublayer.proj"),
    ("transformer.ln_f", "stack.norm_f"),
    ("transformer.", ""),
]
CONV1D = ("c_attn.weight", "c_proj.weight", "c_fc.weight")  # stored (in, out): transposed


def port_name(name: str) -> str:
    name = re.sub(r"^transformer\.h\.(\d+)\.", r"stack.layers.\1.", name)
    for theirs, ours in RULES:
        name = name.replace(theirs, ours)
    return name


def gpt2_and_port(n_embd=32, n_layer=2, n_head=4, vocab=64, positions=16, seed=0):
    """A random-init Hugging Face GPT-2 and the handbook's GPT with its weights."""
    torch.manual_seed(seed)
    size = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    config = transformers.GPT2Config(
        vocab_size=vocab, n_positions=positions, bos_token_id=0, eos_token_id=0, **size
    )
    hf = transformers.GPT2LMHeadModel(config).eval()
    ours = GPT(
        GPTConfig(vocab_size=vocab, block_size=positions, activation="gelu_tanh", **size)
    ).eval()
    state = {port_name(k): v.t() if k.endswith(CONV1D) else v for k, v in hf.state_dict().items()}
    ours.load_state_dict(state)  # strict
    return hf, ours, torch.randint(0, vocab, (2, positions))


@pytest.fixture(scope="module")
def gpt2():
    return gpt2_and_port()


class OnePlusRMSNorm(nn.RMSNorm):
    """Stores w, scales by 1 + w (Gemma3RMSNorm)."""

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, 1 + self.weight, self.eps)


class Tiny(nn.Module):
    def __init__(self, norm=nn.RMSNorm):
        super().__init__()
        self.embed, self.norm = nn.Embedding(64, 32), norm(32, eps=1e-6)
        self.head = nn.Linear(32, 64)

    def forward(self, idx):
        return self.head(self.norm(self.embed(idx)))


def tiny_pair(seed=0):
    torch.manual_seed(seed)
    reference = Tiny().eval()
    port = Tiny().eval()
    port.load_state_dict(reference.state_dict())
    return reference, port, torch.randint(0, 64, (2, 8))


# --- no false alarm on an exact port ------------------------------------------------------------


def test_a_clean_port_of_gpt2_agrees_by_order_by_rule_and_by_name(gpt2):
    hf, ours, idx = gpt2
    by_order = compare(hf, ours, idx)
    by_rule = compare(hf, ours, idx, pairs=port_name)
    names = {p.reference: p.port for p in by_rule.pairs}
    by_name = compare(hf, ours, idx, pairs=names)
    for report in (by_order, by_rule, by_name):
        assert report.first_divergence is None
        assert len(report.pairs) == 16  # wte, wpe, 6 per layer, ln_f, lm_head
        assert str(report) == "no divergence: 16 layer pairs agree (float32)"
    assert [(p.reference, p.port) for p in by_order.pairs] == [
        (p.reference, p.port) for p in by_rule.pairs
    ]
    assert by_order.pairs[0].reference == "transformer.wte" and by_order.pairs[0].port == "wte"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_clean_ports_stay_well_inside_the_tolerance(dtype):
    """The margin TOLERANCE_FACTOR leaves: clean ports use at most half of it here."""
    for seed in range(3):
        hf, ours, idx = gpt2_and_port(n_embd=64, n_layer=3, seed=seed)
        report = compare(hf.to(dtype), ours.to(dtype), idx)
        assert report.first_divergence is None
        assert max(p.excess for p in report.pairs) < 0.5, seed
        assert {p.dtype for p in report.pairs} == {dtype}


def test_runs_on_every_device(device):
    reference, port, idx = tiny_pair()
    report = compare(reference.to(device), port.to(device), idx.to(device))
    assert report.first_divergence is None and len(report.pairs) == 3
    with torch.no_grad():
        port.norm.weight.mul_(1.01)
    assert compare(reference, port, idx.to(device)).first_divergence.port == "norm"


# --- it names the planted layer -----------------------------------------------------------------


def test_a_wrong_eps_is_named_in_float32_and_hides_in_bfloat16(gpt2):
    hf, ours, idx = gpt2
    norm = ours.stack.layers[1].mlp.norm_in
    norm.eps = 1e-6  # GPT-2's is 1e-5
    try:
        report = compare(hf, ours, idx, pairs=port_name)
        first = report.first_divergence
        assert (first.reference, first.port) == (
            "transformer.h.1.ln_2",
            "stack.layers.1.mlp.norm_in",
        )
        assert all(not p.diverged for p in report.pairs[: report.pairs.index(first)])
        assert str(report).splitlines() == [
            "first divergence at pair 12 of 16:",
            "  reference transformer.h.1.ln_2",
            "  port      stack.layers.1.mlp.norm_in",
            "  largest difference 0.022, output RMS 0.99",
            "  tolerance 3e-05 in float32, 0.12 in bfloat16 (this run: float32)",
        ]
        assert compare(hf, ours, idx).first_divergence == first  # by order: the same pair
        # the change is about 2% of the output: under bfloat16's tolerance
        bf16 = compare(hf.to(torch.bfloat16), ours.to(torch.bfloat16), idx, pairs=port_name)
        assert bf16.first_divergence is None
    finally:
        norm.eps = 1e-5
        hf.float(), ours.float()


def test_a_one_plus_w_weight_loaded_as_w_is_named():
    torch.manual_seed(0)
    reference = Tiny(OnePlusRMSNorm).eval()
    with torch.no_grad():
        reference.norm.weight.normal_(0.0, 0.05)
    port = Tiny().eval()
    port.load_state_dict(reference.state_dict())  # loads without a missing key
    idx = torch.randint(0, 64, (2, 8))
    first = compare(reference, port, idx).first_divergence
    assert (first.reference, first.port) == ("norm", "norm")
    assert first.max_diff > 1
    with torch.no_grad():
        port.norm.weight.add_(1)
    assert compare(reference, port, idx).first_divergence is None


def test_the_first_divergence_is_first_in_running_order():
    """Both the norm and the head differ; the norm runs first, so it is named."""
    reference, port, idx = tiny_pair()
    with torch.no_grad():
        port.head.bias.add_(1)
        port.norm.weight.mul_(2)
    report = compare(reference, port, idx)
    assert [p.diverged for p in report.pairs] == [False, True, True]
    assert report.first_divergence.reference == "norm"


def test_a_shared_module_is_compared_call_by_call():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(torch.tanh(self.lin(x)))

    torch.manual_seed(0)
    reference, port = Twice().eval(), Twice().eval()
    port.load_state_dict(reference.state_dict())
    x = torch.randn(3, 4)
    report = compare(reference, port, x, pairs={"lin": "lin"})
    assert len(report.pairs) == 2 and report.first_divergence is None
    assert len(compare(reference, port, x).pairs) == 2


def test_a_tuple_output_is_compared_by_its_first_tensor():
    class Pairwise(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x), None

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Pairwise()

        def forward(self, x):
            return self.block(x)[0]

    torch.manual_seed(0)
    reference, port = Model(), Model()
    port.load_state_dict(reference.state_dict())
    report = compare(reference, port, torch.randn(2, 4), pairs={"block": "block"})
    assert report.pairs[0].shape == (2, 4) and report.first_divergence is None


# --- the tolerance per dtype --------------------------------------------------------------------


def test_the_default_tolerance_is_k_eps_of_the_output_scale():
    assert TOLERANCE_FACTOR == {32: 256, 16: 16}
    for dtype, k in [
        (torch.float64, 256),
        (torch.float32, 256),
        (torch.bfloat16, 16),
        (torch.float16, 16),
    ]:
        eps = torch.finfo(dtype).eps
        assert default_tolerance(dtype, 2.0) == (k * eps, k * eps * 2.0)
    assert default_tolerance(torch.bfloat16, 1.0)[1] == 0.125  # 16 * 2**-7
    with pytest.raises(TypeError, match=r"floating-point torch.dtype, got torch.int64"):
        default_tolerance(torch.int64, 1.0)


def test_the_tolerance_is_that_of_the_dtype_that_ran():
    reference, port, idx = tiny_pair()
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        report = compare(reference.to(dtype), port.to(dtype), idx)
        for p in report.pairs:
            assert p.dtype == dtype
            assert (p.rtol, p.atol) == default_tolerance(dtype, p.scale)
            assert p.tolerance(torch.float32) == default_tolerance(torch.float32, p.scale)[1]


def test_the_threshold_sits_at_the_tolerance():
    """A difference just under atol passes, just over it diverges (rtol=0: atol alone)."""
    reference, port, idx = tiny_pair()
    with torch.no_grad():
        port.head.bias.add_(1e-3)  # every logit moves by 1e-3
    head = compare(reference, port, idx, rtol=0.0, atol=1.1e-3).pairs[-1]
    assert not head.diverged and head.max_diff == pytest.approx(1e-3, rel=1e-3)
    assert compare(reference, port, idx, rtol=0.0, atol=0.9e-3).pairs[-1].diverged
    assert compare(reference, port, idx).pairs[-1].diverged  # 1e-3 >> 3e-5 of the scale


# --- errors -------------------------------------------------------------------------------------


def test_modules_that_are_not_modules_are_refused():
    reference, port, idx = tiny_pair()
    with pytest.raises(TypeError, match=r"reference must be a torch.nn.Module, got function"):
        compare(lambda x: x, port, idx)
    with pytest.raises(TypeError, match=r"port must be a torch.nn.Module, got OrderedDict"):
        compare(reference, port.state_dict(), idx)


def test_a_mapping_naming_a_missing_layer_is_refused():
    reference, port, idx = tiny_pair()
    with pytest.raises(ValueError, match=r"names 'norms', which the reference does not have"):
        compare(reference, port, idx, pairs={"norms": "norm"})
    with pytest.raises(ValueError, match=r"maps 'norm' to 'ln', which the port does not have"):
        compare(reference, port, idx, pairs={"norm": "ln"})
    with pytest.raises(ValueError, match=r"maps 'head' to 'lm_head', which the port"):
        compare(reference, port, idx, pairs=lambda name: "lm_head" if name == "head" else name)
    with pytest.raises(ValueError, match=r"pairs names no layer to compare"):
        compare(reference, port, idx, pairs={})
    with pytest.raises(TypeError, match=r"pairs must be None, a dict .* got list"):
        compare(reference, port, idx, pairs=[("norm", "norm")])


def test_outputs_of_different_shapes_name_both_layers_and_shapes():
    reference, port, idx = tiny_pair()
    with pytest.raises(
        ValueError,
        match=re.escape(
            "reference layer 'embed' returns shape (2, 8, 32), "
            "port layer 'head' returns shape (2, 8, 64)"
        ),
    ):
        compare(reference, port, idx, pairs={"embed": "head"})


def test_pairing_by_order_needs_the_same_count():
    reference, _, idx = tiny_pair()
    port = nn.Sequential(nn.Embedding(64, 32), nn.Linear(32, 64))
    with pytest.raises(
        ValueError, match=r"the reference runs 3 layers with parameters, the port 2; pass pairs="
    ):
        compare(reference, port, idx)


class SkipsA(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        return self.b(x)  # a never runs


def test_a_layer_that_runs_a_different_number_of_times_is_refused():
    model, x = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)), torch.randn(2, 4)
    with pytest.raises(ValueError, match=r"reference layer '0' ran 1 times, port layer 'a' 0"):
        compare(model, SkipsA(), x, pairs={"0": "a"})
    with pytest.raises(ValueError, match=r"reference layer 'a' did not run on these inputs"):
        compare(SkipsA(), model, x, pairs={"a": "0"})


def test_bad_tolerances_are_refused():
    reference, port, idx = tiny_pair()
    with pytest.raises(ValueError, match=r"rtol must be >= 0, got -1"):
        compare(reference, port, idx, rtol=-1)
    with pytest.raises(TypeError, match=r"atol must be None or a number, got bool"):
        compare(reference, port, idx, atol=True)


def test_a_report_is_plain_data():
    reference, port, idx = tiny_pair()
    report = compare(reference, port, idx)
    assert isinstance(report, Report) and report.pairs[0].shape == (2, 8, 32)
    assert all(p.max_diff == 0 and p.excess == 0 for p in report.pairs)
