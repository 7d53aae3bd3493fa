"""The census of decoder families (hooks/resnorm_site/census/): it runs, it probes nearly
every family, known families give the answers their code gives, it agrees with the
hand-checked table of reference/models.md wherever both state the same thing, and the
page it fills reads in both languages.

The census is read from the build cache when one for the installed transformers and the
same census code is there, else computed once for the session (about a minute).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from resnorm_site import census as census_module
from resnorm_site.census import families, layer, norms, page, source
from resnorm_site.census.trace import Recorder
from resnorm_site.census.words import WORDS

ROOT = Path(__file__).resolve().parent.parent
MODELS_PAGE = ROOT / "docs" / "reference" / "models.md"


@pytest.fixture(scope="session")
def data() -> dict:
    return census_module.census()


def cells(data: dict, family: str) -> dict:
    return census_module.row(data, family)["cells"]


def places(c: dict) -> set[str]:
    return {p for form in c["placement"] for part, p in form if part != "parallel"}


# --- the census as a whole -------------------------------------------------------------


def test_the_census_probes_nine_families_in_ten(data: dict):
    rows = data["rows"]
    assert len(rows) >= 150, "fewer decoder families than the release holds"
    probed = [r for r in rows if r["method"] == "probed"]
    assert len(probed) >= 0.9 * len(rows), [r["family"] for r in rows if r not in probed]
    for row in rows:
        if row["method"] != "probed":
            assert row.get("why") in WORDS["en"]["why"], row["family"]


def test_every_folder_is_a_row_or_left_out_by_a_rule(data: dict):
    left = sum(len(names) for names in data["left_out"].values())
    assert left + len(data["rows"]) == data["folders"]
    assert set(data["left_out"]) <= set(families.RULES)
    assert "bert" in data["left_out"]["encoder"]
    assert "t5" in data["left_out"]["encoder_decoder"]
    assert any(n.startswith("llava:") for n in data["left_out"]["reuses"])


def test_the_cache_is_keyed_by_the_version_and_the_code(data: dict):
    path = census_module.cache_file()
    assert path.is_file()
    assert path.name == f"{families.version()}-{census_module.code_hash()}.json"
    assert data["transformers"] == families.version()
    assert census_module.census() is data  # once per process


def test_a_family_that_does_not_exist_is_a_clear_error(data: dict):
    with pytest.raises(census_module.CensusError, match="no model family 'llamaa'"):
        census_module.row(data, "llamaa")
    with pytest.raises(census_module.CensusError, match="left out"):
        census_module.row(data, "bert")
    with pytest.raises(families.CensusError, match="no model family"):
        families.classify("no_such_family")


# --- known families give the answers of their code -------------------------------------


def config_default(name: str, attribute: str):
    import transformers

    return getattr(getattr(transformers, name)(), attribute)


def test_llama(data: dict):
    c = cells(data, "llama")
    assert c["norm"] == ["rmsnorm"] and c["weight"] == ["w"]
    assert c["float32"] == ["f32_w16"]  # w * x.to(input_dtype): the weight after the cast
    assert places(c) == {"pre"} and c["final_norm"] == "yes"
    assert c["eps"] == config_default("LlamaConfig", "rms_norm_eps")
    assert c["topology"] == "one" and not c["qk"]["qk"]


def test_gemma2_and_gemma3(data: dict):
    g2, g3 = cells(data, "gemma2"), cells(data, "gemma3")
    for c in (g2, g3):
        assert c["weight"] == ["1+w"] and places(c) == {"around"}
        assert c["float32"] == ["f32_w32"]  # (x * (1 + w)) in float32, then the cast
    assert g2["attn_cap"] == config_default("Gemma2Config", "attn_logit_softcapping")
    assert g2["final_cap"] == config_default("Gemma2Config", "final_logit_softcapping")
    assert g2["final_cap_method"] == "ran"  # measured by saturating the output head
    assert g3["qk"]["qk"] == ["head_1p"]


def test_olmo2_gpt2_qwen3_cohere(data: dict):
    olmo2 = cells(data, "olmo2")
    assert places(olmo2) == {"output"} and olmo2["qk"]["qk"] == ["proj"]
    gpt2 = cells(data, "gpt2")
    assert gpt2["norm"] == ["layernorm"] and places(gpt2) == {"pre"}
    assert cells(data, "qwen3")["qk"]["qk"] == ["head"]
    cohere = cells(data, "cohere")
    assert [["parallel", True]] == [p for p in cohere["placement"][0] if p[0] == "parallel"]
    assert cohere["norm"] == ["layernorm_nobias"]


def test_muse_spark(data: dict):
    c = cells(data, "muse_spark")
    assert places(c) == {"around"}
    assert c["topology"] == "gated"  # alpha x + beta F(x), alpha per feature
    assert c["qk"]["qk"] == ["head_noweight"] and c["qk"]["o"] == ["head_noweight"]
    assert c["gate"] == ["elementwise"] and c["final_cap"] == 20.0
    assert "rmsnorm_scale_first" in c["norm"]  # the input-scaled RMSNorm


def test_float32_as_computed(data: dict):
    assert cells(data, "gemma4")["float32"] == ["f32_w32"]  # w, multiplied in float32
    assert cells(data, "deepseek_v4")["float32"] == ["f32_w32"]  # (w * x).to(input_dtype)
    assert cells(data, "olmo2")["float32"] == ["f32_w32"]  # (w * x).to(input_dtype)
    assert cells(data, "qwen3")["float32"] == ["f32_w16"]  # Llama's norm


def test_streams_and_depth(data: dict):
    assert cells(data, "deepseek_v4")["topology"] == "streams_mixed"
    assert cells(data, "hy_v4")["topology"] == "streams"
    assert cells(data, "inkling2")["topology"] == "depth"
    assert cells(data, "inkling2")["final_norm"] == "after_collapse"


# --- the method, on modules built here --------------------------------------------------


class PlainRMSNorm(nn.Module):
    """No float32 upcast, scale 1 + w."""

    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1 + self.weight)


class Block(nn.Module):
    def __init__(self, d: int, where: str):
        super().__init__()
        self.where = where
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.mlp = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x):
        if self.where == "pre":
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))
        if self.where == "post":
            x = self.norm1(x + self.attn(x))
            return self.norm2(x + self.mlp(x))
        x = x + self.norm1(self.attn(x))  # output only
        return x + self.norm2(self.mlp(x))


def recorded(module, x):
    with torch.no_grad(), Recorder(module) as recorder:
        module(x)
    return recorder


def test_a_norm_is_found_by_what_it_computes():
    x = torch.randn(1, 7, 16)
    recorder = recorded(PlainRMSNorm(16), x)
    call = recorder.calls[0]
    assert norms.normalizes(call)
    found = norms.describe(call)
    assert (found.kind, found.weight, found.float32) == ("rms", "1+w", "bf16")
    assert found.eps == pytest.approx(1e-6, rel=1e-3)
    recorder = recorded(nn.LayerNorm(16, eps=1e-5), x)
    found = norms.describe(recorder.calls[0])
    assert (found.kind, found.weight, found.bias) == ("layer", "w", True)
    assert not norms.normalizes(recorded(nn.Linear(16, 16), x).calls[0])


class LlamaStyleRMSNorm(nn.Module):
    """Normalized in float32, cast back, then the weight in the input's dtype."""

    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * h.to(dtype)


class GemmaStyleRMSNorm(nn.Module):
    """Normalized and scaled by 1 + w in float32, cast back once."""

    def __init__(self, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        h = h * (1.0 + self.weight.float())
        return h.type_as(x)


class InverseOnlyRMSNorm(nn.Module):
    """Only 1/rms in float32, as DeepseekV4UnweightedRMSNorm."""

    def forward(self, x):
        return x * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6).to(x.dtype)


FLOAT32 = [
    (PlainRMSNorm, "1+w", "bf16"),  # no upcast at all
    (LlamaStyleRMSNorm, "w", "f32_w16"),
    (GemmaStyleRMSNorm, "1+w", "f32_w32"),
    (InverseOnlyRMSNorm, "none", "rms_only"),
]


@pytest.mark.parametrize("cls,weight,float32", FLOAT32, ids=[c[0].__name__ for c in FLOAT32])
def test_float32_is_read_from_what_the_norm_computes(cls, weight: str, float32: str):
    module = cls() if cls is InverseOnlyRMSNorm else cls(16)
    found = norms.describe(recorded(module, torch.randn(1, 7, 16)).calls[0])
    assert (found.weight, found.float32) == (weight, float32)


def test_torch_layernorm_scales_in_float32_and_rounds_once():
    found = norms.describe(recorded(nn.LayerNorm(16), torch.randn(1, 7, 16)).calls[0])
    assert found.float32 == "f32_w32"


@pytest.mark.parametrize("cls,weight,float32", FLOAT32, ids=[c[0].__name__ for c in FLOAT32])
def test_float32_read_from_the_source_where_a_norm_cannot_run(cls, weight, float32):
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    assert source.upcast_of(tree.body[0]) == float32


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_float32_reading_has_words(lang: str):
    keys = {"f32_w32", "f32_w16", "f32", "rms_only", "bf16", "f32_out", "other"}
    assert set(WORDS[lang]["float32"]) == keys
    for key in ("attn_cap", "final_cap"):  # a cap is the class default's, on every row
        assert WORDS[lang][key].format(value="30") != "30"


@pytest.mark.parametrize("where,expected", [("pre", "pre"), ("post", "post"), ("out", "output")])
def test_a_placement_is_read_from_the_values(where: str, expected: str):
    block = Block(16, where)
    recorder = recorded(block, torch.randn(1, 7, 16))
    top = next(c for c in recorder.calls if c.name == "")
    steps, out, _ = layer.expressions(top, recorder, {})
    assert set(layer.placements(steps, out).values()) == {expected}


# --- agreement with the hand-checked table of reference/models.md ----------------------

# The table's model names and the families that build them in transformers. None: the
# model has no decoder family of its own in the release (an encoder, an encoder-decoder,
# a model without Hugging Face code, one that reuses another family's code).
FAMILY = {
    "Transformer (2017)": None,
    "BERT": None,
    "GPT-2": "gpt2",
    "GPT-3": None,
    "T5": None,
    "GPT-J": "gptj",
    "PaLM": None,
    "GPT-NeoX-20B": "gpt_neox",
    "BLOOM": "bloom",
    "Falcon": "falcon",
    "LLaMA": "llama",
    "Llama 2": "llama",
    "Llama 3.x": "llama",
    "Mistral 7B": "mistral",
    "Mixtral": "mixtral",
    "Phi-2": "phi",
    "StarCoder2": "starcoder2",
    "Qwen2": "qwen2",
    "Phi-3 (Phi-4 not verified)": "phi3",
    "Cohere Command R": "cohere",
    "Grok-1": None,
    "DeepSeek-V3": "deepseek_v3",
    "Gemma 2": "gemma2",
    "OLMo 2": "olmo2",
    "Gemma 3": "gemma3",
    "Llama 4": "llama4",
    "GLM-4-0414 (superseded by GLM-4.5)": "glm4",
    "Qwen3": "qwen3",
    "Gemma 3n": "gemma3n",
    "Kimi K2": None,  # kimi_k25 reuses deepseek_v3
    "GPT-OSS": "gpt_oss",
    "Qwen3-Next": "qwen3_next",
    "OLMo 3": "olmo3",
    "Qwen3.5": "qwen3_5",
    "DeepSeek-V4": "deepseek_v4",
    "MiniMax-Text-01, MiniMax-M1": "minimax",
    "GLM-4.5, GLM-4.6": "glm4_moe",
    "MiniMax-M2": "minimax_m2",
    "Gemma 4": "gemma4",
    "Kimi K3": None,  # main branch only, not in the release
}
COLUMNS = [
    "model", "placement", "norm", "eps", "final", "qk", "sinks", "cap", "residual", "source"
]  # fmt: skip


def hand_rows() -> list[dict[str, str]]:
    text = MODELS_PAGE.read_text(encoding="utf-8")
    lines = text[text.index("## The table") :].splitlines()[1:]
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in line.strip().strip("|").split(" | ")])
    return [dict(zip(COLUMNS, r, strict=True)) for r in table[2:]]


def hand_placement(cell: str) -> set[str] | None:
    if cell.startswith("Post"):
        return {"normed_skip"} if "normed_skip" in cell else {"post"}
    if cell.startswith("Pre"):
        return {"pre"}
    if cell.startswith("around each sublayer"):
        return {"around"}
    if cell.startswith("on the sublayer output only"):
        return {"output"}
    return None


def hand_qk(cell: str) -> list[str] | None:
    """The census's q/k forms that the cell states, or None when it states a condition."""
    if cell.startswith(("if ", "optional")):
        return [] if "default off" in cell else None
    if cell.startswith("none"):
        return []
    option = re.findall(r'qk_norm="(\w+)"', cell)
    if len(set(option)) == 1 and "weighted on" not in cell:  # the handbook's own option
        return option[:1]
    if "whole projection" in cell:
        return ["proj"]
    if cell.startswith("weightless"):
        return ["head", "head_noweight"] if "weighted on" in cell else ["head_noweight"]
    if cell.startswith("per head"):
        return ["head_1p"] if "(1+w)" in cell else ["head"]
    return None


def hand_sinks(cell: str) -> list[str] | None:
    if cell.startswith("learned"):
        return ["learned"]
    if cell.startswith("per token"):
        return ["computed"]
    return [] if cell.startswith("none") else None


def hand_cap(cell: str) -> tuple[float | None, float | None] | None:
    """(the output-logit cap the cell states, the class default it states), or None when
    it states neither ("not stated")."""
    values = [float(v) for v in re.findall(r"`([0-9.]+)`", cell)]
    if "class default none" in cell:  # a checkpoint's value beside the class default
        return (values[0] if values else None), None
    if cell.startswith("class default") and values:
        return values[0], values[0]
    if cell.startswith("none"):
        return None, None
    return None


def disagreements(data: dict) -> tuple[list, list]:
    """(model, column, the table's cell, the census's value) where they differ, and
    (model, column) where the table's cell states something the census does not read."""
    found, skipped = [], []
    for hand in hand_rows():
        family = FAMILY[hand["model"]]
        if family is None:
            continue
        c = cells(data, family)
        placement = hand_placement(hand["placement"])
        if placement is None:
            skipped.append((hand["model"], "placement"))
        elif places(c) != placement:
            found.append((hand["model"], "placement", hand["placement"], str(sorted(places(c)))))
        parallel = any(p[0] == "parallel" for f in c["placement"] for p in f)
        if ("parallel" in hand["placement"]) != parallel:
            found.append((hand["model"], "parallel", hand["placement"], str(parallel)))
        kind = "rmsnorm" if "RMS" in hand["norm"] else "layernorm"
        if not any(k.startswith(kind) for k in c["norm"]):
            found.append((hand["model"], "norm", hand["norm"], str(c["norm"])))
        one_plus = "(1+w)" in hand["norm"] and "not $1+w$" not in hand["norm"]
        if one_plus != ("1+w" in c["weight"]):
            found.append((hand["model"], "weight", hand["norm"], str(c["weight"])))
        default = re.search(r"class default `([0-9.e-]+)`", hand["eps"])
        stated = re.search(r"`([0-9.e-]+)`", hand["eps"])
        if default is None and (stated is None or float(stated.group(1)) != c["eps"]):
            skipped.append((hand["model"], "eps"))  # another source's value, or none
        elif default is not None and float(default.group(1)) != c["eps"]:
            found.append((hand["model"], "eps", hand["eps"], str(c["eps"])))
        final = hand["final"].startswith("yes")
        if hand["final"].startswith(("yes", "no")) and final != c["final_norm"].startswith(
            ("yes", "after")
        ):
            found.append((hand["model"], "final norm", hand["final"], c["final_norm"]))
        qk = hand_qk(hand["qk"])
        if qk is None:
            skipped.append((hand["model"], "qk"))
        elif sorted(c["qk"]["qk"]) != qk:
            found.append((hand["model"], "qk", hand["qk"], str(c["qk"]["qk"])))
        if ("value head" in hand["qk"]) != bool(c["qk"]["v"]):
            found.append((hand["model"], "v-norm", hand["qk"], str(c["qk"]["v"])))
        sinks = hand_sinks(hand["sinks"])
        if sinks is None:
            skipped.append((hand["model"], "sinks"))
        elif sorted(c["sinks"]) != sinks:
            found.append((hand["model"], "sinks", hand["sinks"], str(c["sinks"])))
        cap = hand_cap(hand["cap"])
        if cap is None:
            skipped.append((hand["model"], "final cap"))
        else:
            stated, default = cap
            if default != c["final_cap"]:
                found.append((hand["model"], "final cap, class default", hand["cap"], ""))
            if stated != c["final_cap"]:
                found.append((hand["model"], "final cap", hand["cap"], str(c["final_cap"])))
        if ("soft-capped" in hand["qk"]) != (c["attn_cap"] is not None):
            found.append((hand["model"], "attention cap", hand["qk"], str(c["attn_cap"])))
        several = c["topology"] in ("streams", "streams_mixed", "depth")
        if hand["residual"].startswith("one stream") == several:
            found.append((hand["model"], "residual", hand["residual"], c["topology"]))
    return found, skipped


# Every difference between the two where one of them is wrong, and which. (The table's
# DeepSeek-V4 row once listed no sinks; DeepseekV4Attention has them, and the row now does.)
KNOWN: dict[tuple[str, str], str] = {}

# Differences where both are right: the table gives a released checkpoint's value, the
# census the class default it reads.
CHECKPOINT = {
    ("Gemma 4", "final cap"): (
        "Google's released configs set final_logit_softcap=30.0 (google-deepmind/gemma "
        "gemma/gm/nn/gemma4/_gemma4.py @b2dc124); Gemma4TextConfig's default is None, "
        "which is what the census reads (the cell states both)"
    ),
}

# Cells of the table that state something else than the census reads, each with why.
NOT_THE_SAME = {
    ("LLaMA", "eps"): "Meta's llama/model.py default (1e-5); the census reads LlamaConfig's",
    ("Mistral 7B", "eps"): "set by the checkpoint's params.json; no code default",
    ("Mixtral", "eps"): "set by the checkpoint's params.json; no code default",
    ("Llama 4", "qk"): "depends on use_qk_norm, which the table's sources set differently",
}


def test_the_census_agrees_with_the_hand_checked_table(data: dict):
    assert set(FAMILY) == {r["model"] for r in hand_rows()}, "a row of models.md has no entry"
    found, skipped = disagreements(data)
    found = {(model, column): (hand, census) for model, column, hand, census in found}
    unexplained = {k: v for k, v in found.items() if k not in KNOWN and k not in CHECKPOINT}
    assert not unexplained, unexplained
    assert set(KNOWN) <= set(found), set(KNOWN) - set(found)
    # each checkpoint value still differs from the class default: when it no longer does,
    # the cell and its entry here go
    assert set(CHECKPOINT) <= set(found), set(CHECKPOINT) - set(found)
    # nothing is passed over in silence: each cell not compared is listed with its reason
    assert set(skipped) == set(NOT_THE_SAME), set(skipped) ^ set(NOT_THE_SAME)


# --- the page -----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_is_filled_in_both_languages(data: dict, lang: str):
    source = ROOT / "docs" / "reference" / ("census.md" if lang == "en" else "census.zh.md")
    text = page.fill(source.read_text(encoding="utf-8"), lang, data)
    assert "[[census:" not in text
    assert f"blob/v{data['transformers']}/src/transformers/models/llama/modeling_llama.py" in text
    assert text.count('??? note "') >= 4
    if any(r["method"] != "probed" for r in data["rows"]):
        assert WORDS[lang]["not_probed"] in text
    if lang == "zh":
        assert "未探测" in text and "Pre-LN：" in text


def test_both_pages_hold_the_same_placeholders():
    en = (ROOT / "docs/reference/census.md").read_text(encoding="utf-8")
    zh = (ROOT / "docs/reference/census.zh.md").read_text(encoding="utf-8")
    assert page.MARKER.findall(en) == page.MARKER.findall(zh)


def test_an_unknown_placeholder_fails(data: dict):
    with pytest.raises(page.PageError, match="census:nope"):
        page.fill("[[census:nope]]", "en", data)


def test_numbers_are_written_as_in_code():
    assert page.number(1e-6) == "1e-6"
    assert page.number(1.5625e-07) == "1.5625e-7"
    assert page.number(30.0) == "30"
    assert page.number(None) == "–"
