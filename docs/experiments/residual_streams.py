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
# # Residual streams at initialization
#
# Hyper-Connections (HC), manifold-constrained Hyper-Connections (mHC), Attention
# Residuals (AttnRes) and DenseFormer change how a sublayer's output reaches the
# sublayers after it. This page asks what each of them does to a freshly initialized
# stack: how large the residual stream gets from layer to layer, how much gradient each
# layer receives, and, for HC and mHC, what the product of the stream-mixing matrices
# does over depth. The models are the handbook's `Stack(..., residual=...)`
# (`snippets/resnorm.py`). This page is executed every time the site is built;
# every number below comes from that run.
#
# ## What we expected
#
# - **Pre-LN** (`residual="add"`) leaves the residual sum un-normalized, and it grows
#   with depth: Xiong et al. 2020 (arXiv 2002.04745, §3.3, Lemma 2) bound
#   $\mathbb{E}\|x_l\|^2$ between $(1 + \tfrac{l}{2})\,d$ and $(1 + \tfrac{3l}{2})\,d$ in
#   their simplified setting (see
#   [Pre-LN](../../placement/pre-ln/#the-residual-stream-grows)); the
#   [depth experiment](../depth/) measures the growth on this stack. The gradient of the
#   last layer's feed-forward weight shrinks with depth (Theorem 1, measured in the
#   [gradient experiment](../gradients_at_init/)).
# - **HC** (Zhu et al. 2024, arXiv 2409.19606) keeps $n$ copies of the stream. Each
#   sublayer reads a weighted sum of them (`pre`), adds its output to every copy with a
#   weight (`post`), and mixes the copies with an $n \times n$ matrix (`comb`). §2.3
#   chooses the initialization "to make the initialization of the hyper-connections
#   equivalent to the Pre-Norm residual connections": the dynamic parts start at 0, the
#   mixing matrix at the identity (Eq. 14). So at initialization every HC curve should
#   be Pre-LN's, and every product of mixing matrices the identity.
# - **Why HC can blow up.** Xie et al. (mHC, arXiv 2512.24880, §3.1) write the mixing
#   matrix of sublayer $l$ as $\mathcal{H}^{\mathrm{res}}_l$: the signal from sublayer
#   $l$ to the top passes through the product $\prod_i \mathcal{H}^{\mathrm{res}}_i$,
#   which for unconstrained matrices "inevitably deviates from the identity mapping", so
#   the signal "is prone to explosion or vanishing". Their evidence is from training: a
#   27B model (30 layers, $n = 4$; Table 5) whose HC run shows a loss surge around step
#   12k (Fig. 2), and an *Amax Gain Magnitude* of the product (its largest absolute row
#   sum, forward, or column sum, backward, averaged over the tokens of a sequence) with
#   peaks of 3000 (Fig. 3 b). A CPU build cannot train a model like that; this page
#   checks the initialization, and then what a given departure of the mixing matrices
#   from the identity does over depth.
# - **mHC** (the same paper, §4.1–4.2) passes the mixing logits through Sinkhorn-Knopp,
#   so every mixing matrix is doubly stochastic (non-negative, rows and columns summing
#   to 1). Such a matrix has spectral norm at most 1, and a product of them is doubly
#   stochastic again (§4.1), so the product should stay at or below 1 at any depth. The
#   paper runs 20 Sinkhorn iterations, an approximation: in the trained 27B model the
#   product's gain reaches about 1.6 at most, against nearly 3000 for HC (§5.4). The
#   handbook's `HyperConnection(constrained=True)` computes what DeepSeek-V4's code in
#   Hugging Face transformers computes (its tests compare the two).
# - **AttnRes** (Kimi Team 2026, arXiv 2603.15031): in Pre-LN, "this uniform aggregation
#   causes uncontrolled hidden-state growth with depth, progressively diluting each
#   layer's contribution" (abstract; §1 puts the growth at $O(L)$). AttnRes feeds each
#   sublayer a softmax-weighted average of the embedding and all earlier sublayer
#   outputs (Full AttnRes, §3.1), with one learned pseudo-query per sublayer, and "all
#   pseudo-query vectors are initialized to zero so that the initial attention weights
#   are uniform over source layers" (§5). At initialization the input of a sublayer is
#   then the Pre-LN sum divided by the number of sources. A norm follows (here the
#   branch's LayerNorm), and a norm ignores a common scale: we expect the sublayers to
#   see what they see in Pre-LN, the same gradients, and a mixed representation much
#   smaller than Pre-LN's stream. The paper's claims of bounded magnitudes are about a
#   trained 48B model (abstract), which this page does not test.
# - **DenseFormer** (Pagliardini et al. 2024, arXiv 2402.02622) adds after each block a
#   depth-weighted average (DWA) of the embedding and all block outputs. The authors'
#   code starts every average at the identity (epfml/DenseFormer at commit `c99a623`,
#   `denseformer/denseformer.py`, `DWAModules._init_weights`: all weights 0, the last
#   1), and so does the handbook's `DepthWeightedAverage`: at initialization a
#   DenseFormer should be its Pre-LN stack exactly.
#
# ## Settings
#
# - `Stack(L, d_model=64, n_heads=4, d_ff=256, residual=R, activation="relu")`, encoder
#   layers (no causal mask), no dropout, Pre-LN branches with LayerNorm and the stack's
#   final norm, for $L \in \{8, 16, 32, 64\}$ and $R$ in add, hc, mhc, attnres (Full
#   AttnRes: one source per sublayer) and denseformer; $n = 4$ streams for HC and mHC.
# - Every `nn.Linear` re-initialized Xavier-normal with zero biases, $W_q$, $W_k$, $W_v$
#   each as a square matrix of its own (`xavier_init_(stack, qkv="per_projection")` from
#   `snippets/lm_experiment.py`), as in the depth and gradient experiments. The
#   connections keep their own initialization: HC as Zhu et al.'s Eq. 14; mHC's
#   projection $\mathcal{N}(0, 0.02^2)$, bias 0, scale 1, as transformers 5.24.0
#   initializes DeepSeek-V4's connections (`DeepseekV4PreTrainedModel._init_weights`;
#   the mHC paper's own runs start their gating factors at 0.01, Table 5); AttnRes's
#   pseudo-queries 0; DenseFormer's averages the identity.
# - Input: unit-variance Gaussian vectors, batch 4, sequence length 32; seeds 0–2 for the
#   model and the data; mean and standard deviation over the seeds.
# - **The stream**, $\mathbb{E}\|x_l\|^2/d$ after block $l$ (the mean of the squares
#   over batch, tokens and features; $l = 0$ is the input, whose value is about 1), where
#   $x_l$ is: for add, the residual sum; for denseformer, the output of the block's DWA;
#   for hc and mhc, **the mean of the $n$ streams** $\bar x_l = \frac1n \sum_k h_{l,k}$
#   (the mean square of the individual streams is printed next to it); for attnres,
#   the depth-weighted mix that the next block reads (after the last block, the mix
#   that goes to the final norm). *Stream growth* is $\mathbb{E}\|x_L\|^2/d$ divided by
#   its value at $l = 0$.
# - **The gradient**, $\|\partial \mathcal{L}/\partial W^{2,l}\|_F$ of each block's
#   second feed-forward weight, for the linear loss
#   $\mathcal{L} = \operatorname{mean}_t \langle y_t, \mathrm{out}_t\rangle$ on random
#   targets $y_t \sim \mathcal{N}(0, I)$, $\mathrm{out}$ the stack's output after its
#   final norm: the quantity and the loss of the
#   [gradient experiment](../gradients_at_init/).
# - **The mixing product.** The handbook's connection computes
#   $h'_k = \mathrm{post}_k\,F(x) + \sum_j \mathrm{comb}_{jk}\,h_j$, so the paper's
#   $\mathcal{H}^{\mathrm{res}}$ is $\mathrm{comb}^\top$. For each token,
#   $P_k = \mathcal{H}^{\mathrm{res}}_k \cdots \mathcal{H}^{\mathrm{res}}_1$ over the
#   first $k$ sublayers (two per block). Reported: its spectral norm (largest singular
#   value), the Amax Gain Magnitude as §3.1 defines it but per token (the larger of the
#   largest absolute row sum and the largest absolute column sum), each the maximum over
#   the tokens of the batch (and over the seeds where several ran), and the second and
#   smallest singular values.
# - **Departures from the identity (labelled, not an initialization any paper uses).**
#   To see what the product does once the mixing matrices are no longer the identity, HC
#   is run with every static mixing matrix replaced by $I + \sigma Z$, $Z$ a standard
#   Gaussian $4 \times 4$ matrix drawn anew for each sublayer, $\sigma \in \{0.02, 0.05,
#   0.1, 0.2\}$; and mHC with the bias of every mixing logit replaced by $s Z$,
#   $s \in \{1, 3, 10\}$. 64 layers, seed 0, no gradient. $\sigma$ and $s$ are dials,
#   not values measured on a trained model.
# - One CPU thread (`torch.set_num_threads(1)`): these tensors are too small to gain
#   from intra-op threads, and one thread keeps the build fast on a shared machine.

# %% tags=["collapse"]
import matplotlib.pyplot as plt
import torch
from IPython.display import display

from snippets.grad_norms import handbook_w2, linear_loss, power_law_fit
from snippets.lm_experiment import xavier_init_
from snippets.resnorm import Stack

torch.set_num_threads(1)  # small tensors: threads cost more than they save

D_MODEL, N_HEADS, D_FF, N_STREAMS = 64, 4, 256, 4
BATCH, SEQ_LEN, SEEDS = 4, 32, range(3)
DEPTHS = [8, 16, 32, 64]
NAMES = {
    "add": "Pre-LN (add)",
    "hc": "HC",
    "mhc": "mHC",
    "attnres": "AttnRes",
    "denseformer": "DenseFormer",
}
STYLE = {
    "add": dict(color="tab:blue", ls="-", marker="o"),
    "hc": dict(color="tab:orange", ls="--", marker="s"),
    "mhc": dict(color="tab:green", ls="-", marker="^"),
    "attnres": dict(color="tab:purple", ls="-", marker="v"),
    "denseformer": dict(color="tab:gray", ls=":", marker="x"),
}


def taps(stack):
    """The modules whose outputs are the representation after each block."""
    if stack.residual == "add":
        return list(stack.layers)
    if stack.residual == "denseformer":
        return list(stack.connections)  # each block's DWA
    if stack.residual in ("hc", "mhc"):
        return list(stack.connections[1::2])  # each block's feed-forward connection
    return list(stack.connections[2::2])  # attnres: the mix the next block reads


def measure(residual, n_layers, seed, edit=None, grads=True, **stack_kwargs):
    """One stack at initialization: the stream after each block, the W2 gradients and,
    for hc and mhc, the product of the mixing matrices over the sublayers."""
    torch.manual_seed(seed)
    stack = Stack(
        n_layers, D_MODEL, N_HEADS, D_FF, residual=residual, activation="relu", **stack_kwargs
    )
    xavier_init_(stack, qkv="per_projection")  # see Settings
    if edit is not None:
        edit(stack)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=g)
    y = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=g)
    sq, per_stream, inputs = [x.pow(2).mean().item()], [x.pow(2).mean().item()], []

    def keep(module, args, out):
        out = out.detach()
        if out.dim() == 4:  # (B, T, n, C): n streams
            per_stream.append(out.pow(2).mean().item())
            out = out.mean(dim=-2)
        sq.append(out.pow(2).mean().item())

    hooks = [m.register_forward_hook(keep) for m in taps(stack)]
    if residual in ("hc", "mhc"):
        for c in stack.connections:  # the streams each connection mixes
            hooks.append(c.register_forward_pre_hook(lambda m, a: inputs.append(a[0].detach())))
    with torch.set_grad_enabled(grads):
        out = stack(x)
    for h in hooks:
        h.remove()
    result = {"sq": sq}
    if grads:
        w2 = [handbook_w2(layer) for layer in stack.layers]
        result["w2"] = [t.norm().item() for t in torch.autograd.grad(linear_loss(y)(out), w2)]
    if inputs:
        result["per_stream"] = per_stream
        spectral, amax, smallest, single = [], [], [], []
        with torch.no_grad():
            P = torch.eye(N_STREAMS).expand(BATCH, SEQ_LEN, N_STREAMS, N_STREAMS)
            for c, h in zip(stack.connections, inputs, strict=True):
                comb = c.mixing(h)[2]  # (B, T, n, n)
                single.append(torch.linalg.svdvals(comb)[..., 1].max().item())
                P = comb.transpose(-1, -2) @ P  # H_res = comb^T, newest on the left
                s = torch.linalg.svdvals(P)  # (B, T, n), largest first
                spectral.append(s[..., 0].max().item())
                smallest.append(s[..., -1].min().item())
                rows, cols = P.sum(-1).abs().amax(-1), P.sum(-2).abs().amax(-1)
                amax.append(torch.maximum(rows, cols).max().item())
        result.update(spectral=spectral, amax=amax, smallest=smallest, single=single)
        result["second"] = s[..., 1].max().item()  # of the whole product
    return result


runs = {(r, n): [measure(r, n, s) for s in SEEDS] for r in NAMES for n in DEPTHS}


def stacked(r, n, key):
    return torch.tensor([run[key] for run in runs[r, n]])  # (seeds, ...)


# %% [markdown]
# ## The stream, layer by layer
#
# The first plot shows $\mathbb{E}\|x_l\|^2/d$ after each block of the 64-layer stacks,
# on a log scale (the band is one standard deviation over the seeds); the second, its
# value after the last block against the depth $L$. Where curves coincide, the dashed
# and dotted ones lie on the solid one.

# %% alt="Mean square of the stream vs layer at init, 64 layers, for each residual topology"
fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
for r, name in NAMES.items():
    sq = stacked(r, 64, "sq")
    mean, std = sq.mean(0), sq.std(0)
    ax.plot(range(65), mean, ms=3, markevery=8, label=name, **STYLE[r])
    ax.fill_between(range(65), mean - std, mean + std, color=STYLE[r]["color"], alpha=0.15)
ax.set_yscale("log")
ax.set_xlabel("layer l")
ax.set_ylabel(r"$E\,\|x_l\|^2 / d$")
ax.set_title("the stream at initialization, 64 layers")
ax.legend()
plt.show()

# %% alt="Mean square of the stream after the last layer vs depth L, for each residual topology"
fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
top = {r: torch.stack([stacked(r, n, "sq")[:, -1] for n in DEPTHS], dim=1) for r in NAMES}
for r, name in NAMES.items():
    ax.errorbar(DEPTHS, top[r].mean(0), yerr=top[r].std(0), capsize=3, label=name, **STYLE[r])
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xticks(DEPTHS, [str(n) for n in DEPTHS])
ax.minorticks_off()
ax.set_xlabel("number of layers L")
ax.set_ylabel(r"$E\,\|x_L\|^2 / d$ after the last layer")
ax.legend()
plt.show()

# %% tags=["collapse"]
growth = {r: top[r] / torch.stack([stacked(r, n, "sq")[:, 0] for n in DEPTHS], 1) for r in NAMES}
print("stream growth E||x_L||^2/d / E||x_0||^2/d, mean (std) over seeds")
print(f"{'':13s}" + "".join(f"{f'L = {n}':>18s}" for n in DEPTHS) + "   exponent k [95% CI]")
exponent = {}
for r, name in NAMES.items():
    cells = "".join(
        f"{f'{m:.3g} ({s:.2g})':>18s}"
        for m, s in zip(growth[r].mean(0), growth[r].std(0), strict=True)
    )
    exponent[r] = power_law_fit(DEPTHS, top[r])
    k, lo, hi = exponent[r]
    print(f"{name:13s}{cells}   {k:5.2f} [{lo:.2f}, {hi:.2f}]")
print("(exponent: E||x_L||^2/d ~ L^k, fitted over the four depths)")


def max_rel_diff(a, b, key):
    """Largest |a - b| / |b| over depths, seeds and layers."""
    return max(
        ((stacked(a, n, key) - stacked(b, n, key)).abs() / stacked(b, n, key).abs()).max().item()
        for n in DEPTHS
    )


same = {
    r: max(max_rel_diff(r, "add", "sq"), max_rel_diff(r, "add", "w2"))
    for r in ("hc", "denseformer")
}
print(f"\nHC vs Pre-LN, largest relative difference (stream and gradients): {same['hc']:.1g}")
print(f"DenseFormer vs Pre-LN, the same: {same['denseformer']:.1g}")
# AttnRes at init: the mix after block l is the Pre-LN sum over 2l + 1 sources divided
# by 2l + 1, so its mean square times (2l + 1)^2 should be Pre-LN's
attn_scaled = max(
    (
        (
            stacked("attnres", n, "sq") * (2 * torch.arange(n + 1) + 1) ** 2
            - stacked("add", n, "sq")
        ).abs()
        / stacked("add", n, "sq")
    )
    .max()
    .item()
    for n in DEPTHS
)
print(
    "AttnRes mix x (number of sources)^2 vs Pre-LN stream, largest relative difference:",
    f"{attn_scaled:.1g}",
)
mhc_ratio = growth["mhc"][:, -1] / growth["add"][:, -1]
print(f"mHC / Pre-LN stream growth at L = 64, per seed: {', '.join(f'{v:.2f}' for v in mhc_ratio)}")
spread = max(
    (stacked("mhc", n, "per_stream") / stacked("mhc", n, "sq") - 1).abs().max().item()
    for n in DEPTHS
)
print(
    "mHC: mean square of the individual streams vs of their mean, largest relative gap:",
    f"{spread:.1g}",
)
# AttnRes again, with every norm's eps at 1e-12: what is left of the difference?
tiny = {r: measure(r, 16, 0, eps=1e-12) for r in ("add", "attnres")}
tiny_grad = max(
    abs(a - b) / b for a, b in zip(tiny["attnres"]["w2"], tiny["add"]["w2"], strict=True)
)
print(f"AttnRes vs Pre-LN gradients, 16 layers, every eps = 1e-12: {tiny_grad:.1g}")

# %% [markdown]
# ## Gradients per layer
#
# The first plot shows $\|\partial \mathcal{L}/\partial W^{2,l}\|_F$ for each block $l$
# of the 64-layer stacks; the second, the last block's against the depth $L$, on
# log-log axes with a $1/\sqrt{L}$ reference (Theorem 1's Pre-LN rate).

# %% alt="W² gradient norm vs layer at init, 64 layers, for each residual topology"
fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
for r, name in NAMES.items():
    w2 = stacked(r, 64, "w2")
    mean, std = w2.mean(0), w2.std(0)
    ax.plot(range(1, 65), mean, ms=3, markevery=8, label=name, **STYLE[r])
    ax.fill_between(range(1, 65), mean - std, mean + std, color=STYLE[r]["color"], alpha=0.15)
ax.set_xlabel("layer l")
ax.set_ylabel(r"$\|\partial L / \partial W^{2,l}\|_F$")
ax.set_ylim(bottom=0)
ax.set_title("gradients at initialization, 64 layers")
ax.legend()
plt.show()

# %% alt="Last layer's W² gradient norm vs depth L for each topology, with a 1/√L reference"
fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
last = {r: torch.stack([stacked(r, n, "w2")[:, -1] for n in DEPTHS], dim=1) for r in NAMES}
for r, name in NAMES.items():
    ax.errorbar(DEPTHS, last[r].mean(0), yerr=last[r].std(0), capsize=3, label=name, **STYLE[r])
ref = last["add"].mean(0)[0] * (torch.tensor(DEPTHS) / DEPTHS[0]) ** -0.5
ax.plot(DEPTHS, ref, color="k", ls=":", lw=1, label=r"$\propto 1/\sqrt{L}$")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xticks(DEPTHS, [str(n) for n in DEPTHS])
ax.minorticks_off()
ax.set_xlabel("number of layers L")
ax.set_ylabel(r"last layer's $\|\partial L / \partial W^{2,L}\|_F$")
ax.legend()
plt.show()

# %%
print("last layer's W2 gradient, mean over seeds; exponent of its fit in L [95% CI]")
print(f"{'':13s}" + "".join(f"{f'L = {n}':>10s}" for n in DEPTHS))
grad_exponent = {}
for r, name in NAMES.items():
    grad_exponent[r] = power_law_fit(DEPTHS, last[r])
    k, lo, hi = grad_exponent[r]
    print(
        f"{name:13s}"
        + "".join(f"{v:10.3f}" for v in last[r].mean(0))
        + f"   {k:5.2f} [{lo:.2f}, {hi:.2f}]"
    )
ratio = {r: (stacked(r, 64, "w2")[:, 0] / stacked(r, 64, "w2")[:, -1]).mean().item() for r in NAMES}
print("\nfirst / last layer's W2 gradient at L = 64, mean over seeds:")
print(", ".join(f"{NAMES[r]} {v:.2f}" for r, v in ratio.items()))
attn_grad = max_rel_diff("attnres", "add", "w2")
mhc_grad = max_rel_diff("mhc", "add", "w2")
print(f"AttnRes vs Pre-LN gradients, largest relative difference: {attn_grad:.2g}")
print(f"mHC vs Pre-LN gradients, largest relative difference: {mhc_grad:.2g}")

# %% [markdown]
# ## The product of the mixing matrices
#
# At initialization, per token: the largest and smallest spectral norm and the largest
# Amax Gain Magnitude of $P_k$ over all $k$, tokens and seeds, and the second singular
# value of the product over all $2L$ sublayers.

# %%
print(
    f"{'':6s}{'L':>4s}{'max ||P_k||_2':>16s}{'min ||P_k||_2':>16s}"
    f"{'max Amax':>12s}{'sigma_2(P_2L)':>16s}"
)
product = {}
for r in ("hc", "mhc"):
    for n in DEPTHS:
        spec, amax = stacked(r, n, "spectral"), stacked(r, n, "amax")
        product[r, n] = (spec.max().item(), spec.min().item(), amax.max().item())
        second = max(run["second"] for run in runs[r, n])
        print(
            f"{NAMES[r]:6s}{n:4d}{product[r, n][0]:16.6f}{product[r, n][1]:16.6f}"
            f"{product[r, n][2]:12.6f}{second:16.1e}"
        )
hc_range = (min(product["hc", n][1] for n in DEPTHS), max(product["hc", n][0] for n in DEPTHS))
mhc_max = max(product["mhc", n][0] for n in DEPTHS)
mhc_amax = max(product["mhc", n][2] for n in DEPTHS)
mhc_second = max(run["second"] for run in runs["mhc", 64])
# one mHC mixing matrix: its second singular value bounds how much of any difference
# between the streams it passes on (the streams' mean passes whole)
mhc_single = max(max(run["single"]) for n in DEPTHS for run in runs["mhc", n])
print(f"\nmHC, one mixing matrix at init: largest second singular value {mhc_single:.2f}")

# %% [markdown]
# ## Does unconstrained HC blow up?
#
# At initialization HC's mixing matrices are the identity, so there is nothing to blow
# up (the table above). The question is what happens once they are not. The runs below
# change them by hand (see Settings: HC with $I + \sigma Z$, mHC with random logits
# $s Z$), at 64 layers, 128 mixing matrices deep. The plots show the spectral norm of
# $P_k$ against the number of sublayers $k$, then the Amax Gain Magnitude, the mHC
# paper's measure, on log scales.

# %%
SIGMAS, LOGIT_SCALES = [0.02, 0.05, 0.1, 0.2], [1, 3, 10]


def hc_noise(sigma):
    def edit(stack):
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for c in stack.connections:  # static_alpha = [pre | comb]
                c.static_alpha[:, 1:] += sigma * torch.randn(N_STREAMS, N_STREAMS, generator=g)

    return edit


def mhc_logits(scale):
    def edit(stack):
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for c in stack.connections:  # base = [pre | post | comb] logits' biases
                c.base[2 * N_STREAMS :] = scale * torch.randn(N_STREAMS**2, generator=g)

    return edit


edited = {("hc", s): measure("hc", 64, 0, hc_noise(s), grads=False) for s in SIGMAS}
edited |= {("mhc", s): measure("mhc", 64, 0, mhc_logits(s), grads=False) for s in LOGIT_SCALES}

# %%
sublayers = range(1, 129)
curves = {"HC at init": (runs["hc", 64][0], dict(color="tab:orange", ls="--"))}
curves["mHC at init"] = (runs["mhc", 64][0], dict(color="tab:green", ls="-", lw=2.5))
reds, greens = plt.get_cmap("Reds"), plt.get_cmap("Greens")
for i, s in enumerate(SIGMAS):
    curves[f"HC, I + {s} Z"] = (edited["hc", s], dict(color=reds(0.35 + 0.2 * i), ls="-"))
for i, s in enumerate(LOGIT_SCALES):
    style = dict(color=greens(0.45 + 0.2 * i), ls=":", lw=2)
    curves[f"mHC, logits {s} Z"] = (edited["mhc", s], style)


def plot_products(key, ylabel):
    _, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
    for name, (run, style) in curves.items():
        ax.plot(sublayers, run[key], label=name, **style)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("sublayers multiplied, k (two per layer)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, ncol=2)
    plt.show()


# %% alt="Spectral norm of the mixing product vs sublayers k, 64 layers: HC, perturbed HC, mHC"
plot_products("spectral", r"$\|P_k\|_2$, max over tokens")

# %% alt="Amax Gain Magnitude of the mixing product vs sublayers k: HC, perturbed HC, mHC"
plot_products("amax", "Amax Gain Magnitude, max over tokens")

# %%
add64 = runs["add", 64][0]["sq"][-1] / runs["add", 64][0]["sq"][0]
print(f"64 layers, seed 0; Pre-LN stream growth for comparison: {add64:.3g}")
print(
    f"{'':18s}{'||P_128||_2':>12s}{'max Amax':>12s}{'sigma_min(P)':>14s}"
    f"{'mean-stream growth':>20s}{'per-stream':>12s}"
)
for (r, s), run in edited.items():
    label = f"HC, sigma = {s}" if r == "hc" else f"mHC, s = {s}"
    mean_growth = run["sq"][-1] / run["sq"][0]
    stream_growth = run["per_stream"][-1] / run["per_stream"][0]
    print(
        f"{label:18s}{run['spectral'][-1]:12.4g}{max(run['amax']):12.4g}"
        f"{run['smallest'][-1]:14.2g}{mean_growth:20.3g}{stream_growth:12.3g}"
    )
above = [s for s in LOGIT_SCALES if max(edited["mhc", s]["spectral"]) > 1 + 1e-5]
print(f"mHC runs whose product's spectral norm exceeds 1 + 1e-5: {above or 'none'}")

# %% [markdown]
# ## What we saw
#
# The printed tables are the result; read with them:
#
# - **At initialization HC is Pre-LN, and DenseFormer is too.** Their streams and
#   gradients match Pre-LN's to the printed difference (float rounding), as Zhu et
#   al.'s Eq. 14 and DenseFormer's identity averages intend, and HC's mixing product is
#   the identity at every depth (spectral norm 1 in the table). So, at these sizes and
#   at initialization, **unconstrained HC does not blow up**: nothing in it differs
#   from Pre-LN yet. The blow-up the mHC paper reports (Amax peaks of 3000, a loss surge
#   around step 12k) is in a 30-layer, 27B-parameter model during training; this page
#   reproduces neither that scale nor that training.
# - **What a departure from the identity does.** With the mixing matrices changed by
#   hand, HC's product grows with depth, faster the larger $\sigma$: its largest
#   singular value and its Amax gain climb over the 128 matrices while its smallest
#   singular value falls, so some combinations of the streams are amplified and others
#   fade. The individual streams follow the product: at the larger $\sigma$ they end far
#   above Pre-LN's stream (the per-stream column), while their mean can end below it
#   until the largest $\sigma$. This is the mechanism of the mHC paper's §3.1; the
#   $\sigma$ are dials, so the numbers say how fast small departures compound over 128
#   matrices, not how far trained matrices depart.
# - **mHC's product stays at 1 or below, to Sinkhorn's accuracy.** At initialization
#   its largest spectral norm and Amax gain are just under 1 (the table). With random
#   logits it stays there while the logits are small; with larger logits, 20 Sinkhorn
#   iterations leave matrices that are not quite doubly stochastic, and the product
#   exceeds 1 slightly (the printed list and values): the effect that the paper's §5.4
#   sees in its trained 27B model as a maximum of about 1.6.
# - **mHC starts by averaging its streams.** Each of its mixing matrices at
#   initialization passes on at most the printed share of any difference between the
#   streams (its second singular value), so after a few sublayers the product has rank
#   one to float32 precision (the printed $\sigma_2$). The streams start as copies and
#   stay nearly equal (the printed gap), and a doubly stochastic mix keeps their mean:
#   the mean stream grows with depth at about Pre-LN's rate (the exponents), and ends no
#   smaller (the printed ratios). The constraint bounds the mixing, not what the
#   sublayers add.
# - **AttnRes's mix shrinks with depth, but the sublayers do not notice.** The mix each
#   sublayer reads is the Pre-LN sum divided by the number of sources (the printed
#   check), so its mean square falls with depth where Pre-LN's rises. The branch's norm
#   removes that scale: the gradients match Pre-LN's to the printed difference, and
#   with every norm's $\varepsilon$ at $10^{-12}$ the difference falls to float
#   rounding, so the $\varepsilon$ is what is left. The paper's bounded magnitudes and
#   more uniform gradients are measured after training, which this page does not test.
# - **Gradients.** Every topology has Pre-LN's gradient profile at initialization: the
#   last layer's gradient falls with depth at the printed rate, near Theorem 1's
#   $1/\sqrt{L}$, and the first layers get more than the last (the printed ratios).
#   mHC's gradients differ from Pre-LN's layer by layer (the printed largest
#   difference) but follow the same trend.
# - **Left out: training.** A training comparison on the handbook's Markov language
#   (the task of the [warmup](../warmup/) and [depth](../depth/) experiments) is not on
#   this page. mHC's 20 Sinkhorn iterations per sublayer add many small operations to
#   every step, and several seeds per topology at several depths did not fit in the time
#   this page may take to build; nor could a CPU build reach the thousands of steps at
#   which the mHC paper saw HC's loss surge.
#
# ## Sources
#
# - Zhu et al. 2024 (ICLR 2025), *Hyper-Connections*, arXiv 2409.19606: §2.3 and Eq. 14
#   (initialization equivalent to Pre-Norm).
# - Xie et al. 2025, *mHC: Manifold-Constrained Hyper-Connections*, arXiv 2512.24880
#   (v2): §3.1 with Figs. 2 and 3 (HC's instability, Amax Gain Magnitude), §4.1 (doubly
#   stochastic: spectral norm at most 1, closed under products), §4.2 (Sinkhorn-Knopp,
#   20 iterations), §5.4 (about 1.6 against nearly 3000), Table 5 (the 27B model).
# - Kimi Team 2026, *Attention Residuals*, arXiv 2603.15031: abstract, §1, §3.1 (Full
#   AttnRes), §5 (pseudo-queries initialized to zero).
# - Pagliardini et al. 2024, *DenseFormer*, arXiv 2402.02622; code epfml/DenseFormer,
#   commit `c99a623`, `denseformer/denseformer.py`.
# - Xiong et al. 2020, arXiv 2002.04745: §3.3, Lemma 2 and Theorem 1.
# - Hugging Face transformers 5.24.0, `models/deepseek_v4/modeling_deepseek_v4.py`
#   (`DeepseekV4HyperConnection`, `DeepseekV4PreTrainedModel._init_weights`).
# - Code: `snippets/resnorm.py` (`Stack`, `HyperConnection`, `sinkhorn_knopp`,
#   `DepthAttention`, `DepthWeightedAverage`), `snippets/lm_experiment.py`
#   (`xavier_init_`), `snippets/grad_norms.py` (`handbook_w2`, `linear_loss`,
#   `power_law_fit`), each with its tests.

# %% tags=["publish"]
results = {}
for r in NAMES:
    results[f"{r}_stream_growth_64"] = f"{growth[r][:, -1].mean():.3g}"
    results[f"{r}_stream_growth_exponent"] = f"{exponent[r][0]:.2f}"
    results[f"{r}_w2_grad_last_exponent"] = f"{grad_exponent[r][0]:.2f}"
results["hc_vs_add_max_rel_diff"] = f"{same['hc']:.1g}"
results["denseformer_vs_add_max_rel_diff"] = f"{same['denseformer']:.1g}"
results["attnres_vs_add_grad_max_rel_diff"] = f"{attn_grad:.1g}"
results["attnres_scaled_vs_add_max_rel_diff"] = f"{attn_scaled:.1g}"
results["attnres_vs_add_grad_max_rel_diff_tiny_eps"] = f"{tiny_grad:.1g}"
results["hc_product_spectral_norm_range"] = f"{hc_range[0]:.6f}–{hc_range[1]:.6f}"
results["mhc_product_max_spectral_norm"] = f"{mhc_max:.6f}"
results["mhc_product_max_amax_gain"] = f"{mhc_amax:.6f}"
results["mhc_product_second_singular_value_64"] = f"{mhc_second:.0e}"
results["mhc_single_matrix_max_second_singular_value"] = f"{mhc_single:.2f}"
for s in SIGMAS:
    key = f"hc_sigma_{str(s).replace('.', '_')}"
    results[f"{key}_product_spectral_norm_64"] = f"{edited['hc', s]['spectral'][-1]:.3g}"
    results[f"{key}_stream_growth_64"] = (
        f"{edited['hc', s]['sq'][-1] / edited['hc', s]['sq'][0]:.3g}"
    )
for s in LOGIT_SCALES:
    results[f"mhc_logits_{s}_product_max_spectral_norm_64"] = (
        f"{max(edited['mhc', s]['spectral']):.6f}"
    )
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
