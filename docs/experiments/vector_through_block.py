# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A vector through one block
#
# What does one sublayer connection do to one token? This experiment follows a
# single vector of 8 features through the connection, stage by stage, for
# [Post-LN](../../placement/post-ln/), [Pre-LN](../../placement/pre-ln/) and the
# sandwich form of [Peri-LN](../../placement/variants/), and draws every
# intermediate vector as bars. One of the articles this handbook started from (the
# [claims ledger](../claims/) lists them) offers the same picture for Pre-Norm and
# Post-Norm as an interactive app; here it
# is static, with one sublayer $F$ shared by all three placements and with each
# stage's mean and standard deviation printed next to it. The
# [interactive version](../vector_widget/) runs in the browser, with this $F$ at
# $d = 8$, five placements and a vector of your own.
#
# ## What we expected
#
# With $\mathrm{LN}$ for LayerNorm and $F$ for the sublayer
# ([one sublayer connection](../../placement/sublayer-connection/)):
#
# | placement | output $y$ |
# |---|---|
# | Post-LN | $\mathrm{LN}\big(x + F(x)\big)$ |
# | Pre-LN | $x + F\big(\mathrm{LN}(x)\big)$ |
# | Sandwich | $x + \mathrm{LN}_2\Big(F\big(\mathrm{LN}_1(x)\big)\Big)$ |
#
# The stages are the nested expressions, innermost first: for Pre-LN $x$,
# $\mathrm{LN}(x)$, $F(\mathrm{LN}(x))$ and the output.
#
# - A fresh LayerNorm (weight 1, bias 0) maps every vector to mean 0 and variance
#   $\sigma^2/(\sigma^2 + \varepsilon)$, just under 1, the variance being the
#   biased one (divide by $d$) ([LayerNorm](../../foundations/layer-norm/); Ba et
#   al. 2016, arXiv 1607.06450). It is blind to the vector's own offset and scale:
#   adding the same $a$ to every feature and multiplying by $c > 0$ leaves the
#   output unchanged, up to $\varepsilon$.
# - So a Post-LN output has mean 0 and standard deviation 1, whatever the scale of
#   $x$; a Pre-LN output is $x$ plus an update computed from the normalized $x$, so
#   it keeps the scale of $x$, and the update does not grow when $x$ does. Nothing
#   inside the block rescales the stream, which is how the hidden state of a Pre-LN
#   stack can grow with depth (Xiong et al. 2020, arXiv 2002.04745, Lemma 2: at
#   initialization its expected squared norm grows linearly with the layer index).
# - Sandwich normalizes the branch too: at initialization its update has standard
#   deviation 1 (CogView's Sandwich-LN, Ding et al. 2021, arXiv 2105.13290; Peri-LN, Kim et al.
#   2025, arXiv 2502.02732). One of the source articles writes Sandwich-LN as
#   $\mathrm{LN}(x + F(\mathrm{LN}(x)))$; CogView's code (THUDM/CogView
#   `mpu/sparse_transformer.py`) has the second norm on the branch, inside the
#   residual sum, as above.
#
# ## Settings
#
# - $x = 2 + 3z$ with $z \sim \mathcal{N}(0, I_8)$ drawn with seed 0: 8 features,
#   off-centre and wide, so that the norm's effect is visible.
# - $F$: the handbook's `FeedForward(8, 32)` (Linear 8→32, GELU, Linear 32→8) with
#   PyTorch's default initialization, seed 1; the same $F$ for every placement.
# - The norms are the ones `Residual(F, 8, norm_position=...)` from
#   `snippets/resnorm.py` creates: `nn.LayerNorm(8)`, weight 1, bias 0,
#   $\varepsilon = 10^{-5}$, as at initialization. No dropout, float32.
# - Later cells rescale $x$ by $c \in \{0.1, 1, 10, 100\}$ and pass 2-feature vectors
#   (seed 8).
#
# The code is `snippets/vector_through_block.py`.

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from snippets.resnorm import FeedForward, Residual
from snippets.vector_through_block import PLACEMENTS, TITLES, mean_std, plot_stages, stages, table

D = 8
torch.manual_seed(0)
x = 2.0 + 3.0 * torch.randn(D)  # (d,)
torch.manual_seed(1)
f = FeedForward(D, 4 * D)

results = {}
for placement in PLACEMENTS:
    r = Residual(f, D, norm_position=placement)  # the handbook's connection, fresh norms
    norm = r.norm_out if placement == "post" else r.norm_in
    results[placement] = stages(x, f, placement, norm=norm, norm_branch=r.norm_branch)
    with torch.no_grad():
        y = r(x.view(1, 1, D)).view(D)  # Residual wants (batch, seq_len, d_model)
    same = torch.allclose(list(results[placement].values())[-1], y)
    print(f"{TITLES[placement]}  (last stage equals Residual's output: {same})")
    print(table(results[placement]))
    print()

# %% [markdown]
# The same numbers as bars: one group per feature, one bar per stage.

# %% alt="Each feature of one vector at each stage of Post-LN, Pre-LN and Sandwich connections"
fig = plot_stages(results, figsize=(15, 5))
plt.show()

# %% [markdown]
# The standard deviation of each stage, side by side. It is the number that tells
# what each placement does to the scale of the token.

# %%
for placement, vectors in results.items():
    print(f"{TITLES[placement]:>18}:")
    for label, v in vectors.items():
        print(f"{label:>22}  std {mean_std(v)[1]:5.2f}")
x_std = mean_std(x)[1]
pre_out = mean_std(results["pre"]["x + F(LN(x))"])[1]
post_out = mean_std(results["post"]["LN(x + F(x))"])[1]
print(f"Pre-LN output std / x std = {pre_out / x_std:.2f};  Post-LN output std = {post_out:.2f}")

# %% [markdown]
# ## The scale of $x$
#
# The interactive app lets a reader type in $x$. The question it can answer is what
# happens when $x$ is larger or smaller. Here $x$ is multiplied by $c$ and, for each
# placement, the output's standard deviation and the size of the update
# $\lVert y - c\,x \rVert / \lVert c\,x \rVert$ are printed (for Post-LN $y - c\,x$ is
# not an update added to the stream, since the norm rescales everything; it is shown
# for comparison).

# %% alt="‖update‖ / ‖c·x‖ vs the input's scale c, Pre-LN and Sandwich, log-log"
scales = [0.1, 1.0, 10.0, 100.0]
print(f"{'c':>6} | " + " | ".join(f"{TITLES[p]:^27}" for p in PLACEMENTS))
print(f"{'':>6} | " + " | ".join(f"{'output std':>12} {'update/|cx|':>14}" for _ in PLACEMENTS))
relative = {p: [] for p in PLACEMENTS}
for c in scales:
    cells = []
    for placement in PLACEMENTS:
        r = Residual(f, D, norm_position=placement)
        norm = r.norm_out if placement == "post" else r.norm_in
        out = list(stages(c * x, f, placement, norm=norm, norm_branch=r.norm_branch).values())[-1]
        rel = ((out - c * x).norm() / (c * x).norm()).item()
        relative[placement].append(rel)
        cells.append(f"{mean_std(out)[1]:>12.3f} {rel:>14.3f}")
    print(f"{c:>6} | " + " | ".join(cells))

fig, ax = plt.subplots(figsize=(6, 3.6), constrained_layout=True)
for placement, marker in zip(("pre", "sandwich"), "os", strict=True):
    ax.plot(scales, relative[placement], marker=marker, label=TITLES[placement])
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("scale c of the input c·x")
ax.set_ylabel("‖update‖ / ‖c·x‖")
ax.set_title("how much one block changes the residual stream")
ax.legend()
plt.show()

# %% [markdown]
# ## Two features, and the unbiased standard deviation
#
# The app's slider goes down to 2 features. With $d = 2$, LayerNorm has almost no
# freedom left: the two centred values are $\pm\delta/2$ and their standard deviation
# is $|\delta|/2$, so the output is $(+1, -1)$ or $(-1, +1)$ for every input with two
# different features, pulled slightly towards 0 by $\varepsilon$ when the two are
# close. Only the order of the two features survives the norm.

# %%
torch.manual_seed(8)
ln2 = nn.LayerNorm(2)
with torch.no_grad():
    for _ in range(4):
        v = 5 * torch.randn(2)
        out = ln2(v)
        print(
            f"x = [{v[0].item():6.2f} {v[1].item():6.2f}]  ->  "
            f"LN(x) = [{out[0].item():6.3f} {out[1].item():6.3f}]"
        )

# %% [markdown]
# To check "standard deviation 1" by hand, use the biased estimate, as LayerNorm
# does. `torch.std` defaults to the unbiased one (divide by $d - 1$), which for
# $d = 8$ reports $\sqrt{8/7}$ instead of 1:

# %%
ln_x = results["pre"]["LN(x)"]
print(f"biased   (unbiased=False): {ln_x.std(unbiased=False).item():.4f}")
print(f"unbiased (the default):    {ln_x.std().item():.4f}   sqrt(8/7) = {(8 / 7) ** 0.5:.4f}")

# %% [markdown]
# ## The articles' worked example: unit-variance $x$, large $F(x)$
#
# One of the source articles argues with numbers: $x$ has variance 1, the sublayer's
# output has a large variance, "say 10", so $x + F(x)$ has variance about 10 and
# Post-LN's norm must scale it back to 1; in Pre-LN the sublayer sees a normalized
# input and the sum is "relatively stable". The single vector above, off-centre and
# wide, is not that scenario, so it cannot test it. Here is the scenario itself:
# 4,096 tokens of 64 features with every entry of $x$ drawn from $\mathcal{N}(0, 1)$
# (seed 2), and a fresh `FeedForward(64, 256)` (seed 3) whose output is multiplied by
# the constant that makes the variance of $F(x)$ exactly 10 on these tokens. Each
# variance is taken over all tokens and features, biased, as LayerNorm's is. The norms
# are fresh `nn.LayerNorm(64)`.

# %%
D_WIDE, TOKENS, TARGET_VAR = 64, 4096, 10.0
torch.manual_seed(2)
xs = torch.randn(TOKENS, D_WIDE)  # (tokens, d), unit variance
torch.manual_seed(3)
g = FeedForward(D_WIDE, 4 * D_WIDE)
ln_wide = nn.LayerNorm(D_WIDE)


def var(t: torch.Tensor) -> float:
    return t.var(correction=0).item()


with torch.no_grad():
    k = (TARGET_VAR / var(g(xs))) ** 0.5  # scale the branch so that Var F(x) = 10

    def F(h):
        return k * g(h)

    fx = F(xs)
    post_sum = xs + fx
    pre_branch = F(ln_wide(xs))
    worked = {
        "x": var(xs),
        "F(x)": var(fx),
        "x + F(x)       Post-LN sum": var(post_sum),
        "LN(x + F(x))   Post-LN output": var(ln_wide(post_sum)),
        "LN(x)          Pre-LN branch input": var(ln_wide(xs)),
        "F(LN(x))       Pre-LN branch": var(pre_branch),
        "x + F(LN(x))   Pre-LN output": var(xs + pre_branch),
    }
for label, v in worked.items():
    print(f"{label:<36} variance {v:6.2f}")
post_var, pre_var = worked["x + F(x)       Post-LN sum"], worked["x + F(LN(x))   Pre-LN output"]
print(
    f"Var x + Var F(x) = {worked['x'] + worked['F(x)']:.2f} (the sum if the two were uncorrelated)"
)
print(
    f"Pre-LN output variance / Post-LN sum variance = {pre_var / post_var:.3f}: "
    f"{'the same to 5%' if abs(pre_var / post_var - 1) < 0.05 else 'different'}"
)

# %% [markdown]
# ## What we saw
#
# - Every normalized stage ($\mathrm{LN}(x)$, $\mathrm{LN}(x + F(x))$, and both norms
#   of the sandwich) has mean 0 and standard deviation 1 to the printed precision.
# - Post-LN's output is normalized: its standard deviation is 1 and its shape
#   follows $x + F(x)$, whose scale is lost. Pre-LN's output keeps the offset and
#   the scale of $x$: the block adds an update computed from the normalized $x$, and
#   the stream itself is never normalized inside the block. A Pre-LN stack therefore
#   ends with one more norm (GPT-2 adds one after its last block, report §2.3); the
#   app's single Pre-Norm block has none, which is right for one block but not for a
#   stack.
# - Multiplying $x$ by $c$ does not change Post-LN's output scale, while Pre-LN's
#   update stays the same size, so its share of the output falls in proportion to
#   $1/c$. In a deep Pre-LN stack, where the residual stream grows with depth, each
#   later block therefore changes the stream less. Sandwich shows the same fall; its
#   update has a fixed size set by the second norm.
# - The interactive app seeds the random generator only when it draws $x$ itself.
#   When the reader types $x$ in, the block's weights are drawn unseeded, and the app
#   reruns its whole script on every change, so every rerun draws new weights:
#   switching between Pre-Norm and Post-Norm then compares two different sublayers.
#   Here one seeded $F$ serves all three placements, and each final stage is checked
#   against the handbook's `Residual`.
# - **The worked example**, measured in its own scenario: with unit-variance $x$ and
#   a branch of variance 10, the sum's variance is close to the sum of the two
#   variances (the branch is nearly uncorrelated with $x$), and Post-LN's norm brings
#   it back to 1, as the article says. Its claim about Pre-LN does not hold in this
#   scenario: the Pre-LN output's variance equals the Post-LN sum's (the ratio line
#   above), because normalizing an $x$ that already has unit variance changes almost
#   nothing, and nothing normalizes the sum. What Pre-LN keeps fixed is the scale of
#   the branch's *input*, not that of the stream.


# %% tags=["publish"]
def std_of(placement, label):
    return f"{mean_std(results[placement][label])[1]:.2f}"


headline = {
    "x_std": f"{x_std:.2f}",
    "pre_ln_x_std": std_of("pre", "LN(x)"),
    "pre_branch_std": std_of("pre", "F(LN(x))"),
    "pre_output_std": std_of("pre", "x + F(LN(x))"),
    "post_branch_std": std_of("post", "F(x)"),
    "post_sum_std": std_of("post", "x + F(x)"),
    "post_output_std": std_of("post", "LN(x + F(x))"),
    "sandwich_branch_std": std_of("sandwich", "LN2(F(LN1(x)))"),
    "sandwich_output_std": std_of("sandwich", "x + LN2(F(LN1(x)))"),
    "pre_output_over_x_std": f"{pre_out / x_std:.2f}",
    "worked_x_var": f"{worked['x']:.2f}",
    "worked_branch_var": f"{worked['F(x)']:.2f}",
    "worked_post_sum_var": f"{post_var:.2f}",
    "worked_post_output_var": f"{worked['LN(x + F(x))   Post-LN output']:.2f}",
    "worked_pre_output_var": f"{pre_var:.2f}",
}
display(
    {
        "application/vnd.resnorm.results+json": headline,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in headline.items()),
    },
    raw=True,
)
