// The interactive picture of "one vector through a sublayer connection"
// (experiments/vector_widget.md): the reader sets x and the connection, and sees every
// stage as bars, and the stream's standard deviation through a stack of such connections.
//
// No server and no other host: the sublayer F's weights come from the site itself
// (assets/widget/vector_block.json, written at build time by hooks/widget.py from
// widget_weights in snippets/vector_through_block.py), and everything is computed here in
// float64, as connection_stages and stream_stds compute it there; the tests compare the
// two. Material's instant navigation swaps pages without a reload, so the widget mounts
// on every page change (document$), wherever a page has a .rn-vector-widget element.
//
// Words: every string the reader sees or hears is in STRINGS below, in English. A page in
// another language puts its own strings in the mount element, as JSON that the widget
// reads before it replaces the element's content:
//   <div class="rn-vector-widget" markdown="0">
//   <script type="application/json" class="rn-vw-strings">{"seed": "种子", …}</script>
//   </div>
// Any key it leaves out keeps the English; {name} marks where a value goes. The strings
// travel with the page they belong to (experiments/vector_widget.zh.md), so this file
// needs no list of languages, and instant navigation between languages needs nothing
// more. Numbers are never localized: every language shows the same digits.
//
// The link: the page's query string may set the controls the widget starts with, so that
// another page can link to the setting it talks about, e.g.
//   experiments/vector_widget/?placement=post&depth=24
// Keys (LINK below): placement (post|pre|sandwich|output|none), norm (layernorm|rmsnorm),
// s (the scale), d (2-16), depth (N, 1-64), seed (0-4294967295), eps (> 0). Each value is
// checked as a typed one is; one the widget cannot use is left out, the control keeps its
// default and the status line says so. Other keys (Material's search adds h=) are not ours.
(() => {
  "use strict";

  const SCRIPT_URL = document.currentScript ? document.currentScript.src : document.baseURI;
  const DATA_URL = new URL("../assets/widget/vector_block.json", SCRIPT_URL).href;

  // The placements and norms; their names are in STRINGS (placement.<id>, norm.<id>).
  const PLACEMENTS = [
    { id: "post", formula: "N(x + s·F(x))" },
    { id: "pre", formula: "x + s·F(N(x))" },
    { id: "sandwich", formula: "x + N2(s·F(N1(x)))" },
    { id: "output", formula: "x + N(s·F(x))" },
    { id: "none", formula: "x + s·F(x)" },
  ];
  const NORMS = [
    { id: "layernorm", label: "LN" },
    { id: "rmsnorm", label: "RMSNorm" },
  ];
  const DIM = { min: 2, max: 16 };
  const DEPTH = { min: 1, max: 64 };
  const ENTRY = { min: -10, max: 10, step: 0.1 };
  const SCALE = { min: -5, max: 5, step: 0.1 };
  const SEED_MAX = 4294967295; // seeds are unsigned 32-bit ints
  const START = {
    d: 8, seed: 0, placement: "pre", norm: "layernorm", eps: "1e-5", scale: 1, depth: 12,
  };
  // The link's keys, in the order they are checked: each sets one field of the state and
  // names the control a reader would type it into (for the status line).
  const LINK = [
    { key: "placement", field: "placement", control: "placement", kind: "option" },
    { key: "norm", field: "norm", control: "norm", kind: "option" },
    { key: "s", field: "scale", control: "scale", kind: "number" },
    { key: "d", field: "d", control: "d", kind: "number" },
    { key: "depth", field: "depth", control: "depth", kind: "number" },
    { key: "seed", field: "seed", control: "seed", kind: "number" },
    { key: "eps", field: "eps", control: "eps", kind: "number" },
  ];
  // A number as a link writes it: decimal, with an optional exponent (no hex, no Infinity).
  const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
  const LINK_TEXT_MAX = 40; // a longer value is cut in the message

  // Every word the widget shows, in English; a page may replace any of them (see the top).
  const STRINGS = Object.freeze({
    "placement.post": "Post-LN",
    "placement.pre": "Pre-LN",
    "placement.sandwich": "Sandwich / Peri-LN",
    "placement.output": "Output norm (OLMo 2)",
    "placement.none": "No norm",
    "norm.layernorm": "LayerNorm",
    "norm.rmsnorm": "RMSNorm",
    // controls
    dimension: "Dimension d",
    vector: "The vector x",
    seed: "Seed",
    random: "New random x (next seed)",
    placement: "Placement (N is the norm)",
    norm: "Norm N (fresh: weight 1, bias 0)",
    eps: "ε",
    scale: "Scale s of F's output",
    scaleShort: "Scale s",
    depth: "Depth N (stacked connections)",
    depthShort: "Depth N",
    typed: "{label}, typed", // the aria-label of the number field beside a slider
    // what a typed value that cannot be used is told
    seedName: "The seed",
    wholeNumber: "{what} must be a whole number from {lo} to {hi}",
    number: "{what} must be a number",
    positive: "ε must be a number > 0",
    kept: "{problem}; the widget keeps {value}.",
    oneOf: "{what} must be one of {options}",
    fromLink: "{problem}, but the link gives {key}={value}",
    // the stages
    stagesHeading: "The stages of one connection",
    summary: "{placement} with {norm}: {stages}.",
    summaryNoNorm: "{placement}: {stages}.",
    description:
      "One panel per stage, in the order computed. In each, one bar per entry of the vector, " +
      "drawn from a zero line in the middle (negative to the left, in another colour) on one " +
      "scale shared by all panels, so that the longest bar is the largest absolute value of " +
      "any stage; the number at the end of each bar is its value, and the line above the bars " +
      "gives the stage's mean and standard deviation (biased, as LayerNorm's).",
    stageLabel:
      "Stage {stage} of {count}, {label}: {values} values, mean {mean}, standard deviation {std}",
    stats: "mean {mean} · std {std}",
    // the stream
    depthHeading: "The stream through N connections",
    chartLabel:
      "Line chart: the standard deviation of the stream after 0 to {layers} {placement} " +
      "connections, on a logarithmic axis; the list below gives every value.",
    chartCaption:
      "The standard deviation of the stream after each of {layers} identical {placement} " +
      "connections (same F and settings, no final norm): layer 0, x itself, on the left, " +
      "layer {layers} on the right. The vertical axis is logarithmic, from {min} (the " +
      "smallest) at the bottom to {max} (the largest) at the top. Every layer's value:",
    layer: "layer {layer}",
    loadError: "The interactive picture could not load its weights ({error}).",
  });

  // The root's strings: its JSON block over the English ones. A block that cannot be read
  // leaves the English, with a warning in the console.
  function readStrings(root) {
    const block = root.querySelector("script.rn-vw-strings");
    let own = {};
    if (block) {
      try {
        own = JSON.parse(block.textContent);
      } catch (err) {
        console.warn("vector widget: the page's strings are not JSON; English is used.", err);
      }
    }
    const words = { ...STRINGS };
    for (const [key, value] of Object.entries(own || {})) {
      if (key in STRINGS && typeof value === "string") words[key] = value;
    }
    return words;
  }

  // A template with its {name} places filled: a list of strings and nodes, for el().
  const fill = (template, values) =>
    template.split(/\{(\w+)\}/).map((part, i) => (i % 2 ? values[part] ?? `{${part}}` : part));
  // The same, as one string (for attributes and status text).
  const fillText = (template, values) => fill(template, values).join("");

  // --- erf and GELU ----------------------------------------------------------------------
  // JavaScript has no Math.erf. Two classical expansions cover the line to about 1e-15
  // (Abramowitz & Stegun 7.1.6 and 7.1.14); beyond 6, erf(x) rounds to +-1.
  const TWO_OVER_SQRT_PI = 1.1283791670955126;
  const ONE_OVER_SQRT_PI = 0.5641895835477563;

  // exp(-a*a) without the rounding error of a*a: with hi = a rounded to float32, hi*hi is
  // exact in float64 and -a*a = -hi*hi - (a - hi)*(a + hi).
  function expMinusSquare(a) {
    const hi = Math.fround(a);
    return Math.exp(-hi * hi) * Math.exp(-(a - hi) * (a + hi));
  }

  function erf(x) {
    if (Number.isNaN(x)) return NaN;
    const a = Math.abs(x);
    let r;
    if (a < 1.75) {
      // 7.1.6: erf a = 2/sqrt(pi) exp(-a^2) sum_n 2^n a^(2n+1) / (1·3·…·(2n+1)), all terms > 0
      const twoA2 = 2 * a * a;
      let term = a;
      let sum = a;
      for (let n = 1; term > sum * 1e-17; n++) {
        term *= twoA2 / (2 * n + 1);
        sum += term;
      }
      r = TWO_OVER_SQRT_PI * expMinusSquare(a) * sum;
    } else if (a < 6) {
      // 7.1.14: erfc a = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + …)))),
      // evaluated from the tail
      let f = a;
      for (let k = 80; k >= 1; k--) f = a + k / 2 / f;
      r = 1 - (ONE_OVER_SQRT_PI * expMinusSquare(a)) / f;
    } else {
      r = 1;
    }
    return x < 0 ? -r : r;
  }

  // Exact GELU, as nn.GELU() computes it: x * 0.5 * (1 + erf(x / sqrt(2))).
  const gelu = (v) => v * 0.5 * (1 + erf(v * Math.SQRT1_2));

  // --- The connection, in float64 ----------------------------------------------------------
  const sublayers = new Map(); // d -> F's weights as Float64Array

  function sublayer(data, d) {
    if (!sublayers.has(d)) {
      const entry = data.ffn[String(d)];
      if (!entry) throw new Error(`vector_block.json has no sublayer for d = ${d}`);
      // The JSON names float32 values; Math.fround gives each one exactly, as a float64.
      const f64 = (name) => Float64Array.from(entry[name], Math.fround);
      sublayers.set(d, {
        d,
        dff: entry.d_ff,
        w1: f64("fc.weight"), // (4d, d), row-major, as nn.Linear's weight
        b1: f64("fc.bias"),
        w2: f64("proj.weight"), // (d, 4d)
        b2: f64("proj.bias"),
      });
    }
    return sublayers.get(d);
  }

  function ffn(W, h) {
    const hidden = new Float64Array(W.dff);
    for (let i = 0; i < W.dff; i++) {
      let acc = 0;
      for (let j = 0; j < W.d; j++) acc += W.w1[i * W.d + j] * h[j];
      hidden[i] = gelu(acc + W.b1[i]);
    }
    const out = new Float64Array(W.d);
    for (let i = 0; i < W.d; i++) {
      let acc = 0;
      for (let j = 0; j < W.dff; j++) acc += W.w2[i * W.dff + j] * hidden[j];
      out[i] = acc + W.b2[i];
    }
    return out;
  }

  const sum = (v) => v.reduce((a, b) => a + b, 0);

  function meanStd(v) {
    const mean = sum(v) / v.length;
    const variance = sum(v.map((t) => (t - mean) * (t - mean))) / v.length; // biased, as LayerNorm
    return [mean, Math.sqrt(variance)];
  }

  // A fresh norm: weight 1, bias 0.
  function normalize(v, norm, eps) {
    if (norm === "layernorm") {
      const mean = sum(v) / v.length;
      const centred = v.map((t) => t - mean);
      const denom = Math.sqrt(sum(centred.map((t) => t * t)) / v.length + eps);
      return centred.map((t) => t / denom);
    }
    const denom = Math.sqrt(sum(v.map((t) => t * t)) / v.length + eps);
    return v.map((t) => t / denom);
  }

  const times = (s, v) => v.map((t) => s * t);
  const plus = (u, v) => u.map((t, i) => t + v[i]);

  // Every stage of one connection, [label, vector] in the order computed; s scales F's
  // output before anything else sees it. As connection_stages in the snippet.
  function connectionStages(data, x, placement, norm, eps, s) {
    const W = sublayer(data, x.length);
    const n = NORMS.find((m) => m.id === norm).label;
    const nx = (v) => normalize(v, norm, eps);
    if (placement === "post") {
      const fx = ffn(W, x);
      const total = plus(x, times(s, fx));
      return [["x", x], ["F(x)", fx], ["s·F(x)", times(s, fx)], ["x + s·F(x)", total],
        [`${n}(x + s·F(x))`, nx(total)]];
    }
    if (placement === "pre") {
      const h = nx(x);
      const fh = ffn(W, h);
      return [["x", x], [`${n}(x)`, h], [`F(${n}(x))`, fh], [`s·F(${n}(x))`, times(s, fh)],
        [`x + s·F(${n}(x))`, plus(x, times(s, fh))]];
    }
    if (placement === "sandwich") {
      const [n1, n2] = [`${n}1`, `${n}2`];
      const h = nx(x);
      const fh = ffn(W, h);
      const g = nx(times(s, fh));
      return [["x", x], [`${n1}(x)`, h], [`F(${n1}(x))`, fh], [`s·F(${n1}(x))`, times(s, fh)],
        [`${n2}(s·F(${n1}(x)))`, g], [`x + ${n2}(s·F(${n1}(x)))`, plus(x, g)]];
    }
    const fx = ffn(W, x);
    if (placement === "output") {
      const g = nx(times(s, fx));
      return [["x", x], ["F(x)", fx], ["s·F(x)", times(s, fx)], [`${n}(s·F(x))`, g],
        [`x + ${n}(s·F(x))`, plus(x, g)]];
    }
    return [["x", x], ["F(x)", fx], ["s·F(x)", times(s, fx)],
      ["x + s·F(x)", plus(x, times(s, fx))]];
  }

  // The stream's standard deviation after 0, 1, …, depth identical connections.
  function streamStds(data, x, placement, norm, eps, s, depth) {
    let v = x;
    const stds = [meanStd(v)[1]];
    for (let l = 0; l < depth; l++) {
      const stages = connectionStages(data, v, placement, norm, eps, s);
      v = stages[stages.length - 1][1];
      stds.push(meanStd(v)[1]);
    }
    return stds;
  }

  // --- The random vector: mulberry32, then a sum of 12 uniforms ----------------------------
  // Every step is exact or correctly rounded in float64, so any language gets the same x.
  function mulberry32(seed) {
    let a = seed | 0;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), a | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // x_i = 2 + 3 z_i with z_i the sum of 12 uniforms minus 6 (mean 0, variance 1), rounded to
  // one decimal (the sliders' step) and kept within the sliders' range.
  function randomVector(d, seed) {
    const next = mulberry32(seed);
    const x = [];
    for (let i = 0; i < d; i++) {
      let z = -6;
      for (let k = 0; k < 12; k++) z += next();
      const v = Math.floor((2 + 3 * z) * 10 + 0.5) / 10;
      x.push(Math.min(ENTRY.max, Math.max(ENTRY.min, v)));
    }
    return x;
  }

  // Four decimals; exponent notation from 1e5 up; never "-0.0000".
  function format(v) {
    if (!Number.isFinite(v)) return String(v);
    const text = Math.abs(v) >= 1e5 ? v.toExponential(4) : v.toFixed(4);
    return /^-0\.0+$/.test(text) ? text.slice(1) : text;
  }

  // --- The page ----------------------------------------------------------------------------
  let counter = 0;

  function el(tag, attrs = {}, ...children) {
    const node = document.createElementNS(
      tag === "svg" || attrs.svg ? "http://www.w3.org/2000/svg" : "http://www.w3.org/1999/xhtml",
      tag,
    );
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "svg" || value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  const svgEl = (tag, attrs = {}) => el(tag, { ...attrs, svg: true });

  // A computed number: visible to 4 decimals, its float64 in data-value.
  const num = (key, v) =>
    el("span", { class: "rn-vw-num", "data-key": key, "data-value": String(v) }, format(v));

  function mount(root, data, words) {
    const uid = `rn-vw-${++counter}`;
    const placements = PLACEMENTS.map((p) => ({ ...p, name: words[`placement.${p.id}`] }));
    const norms = NORMS.map((m) => ({ ...m, name: words[`norm.${m.id}`] }));
    const id = (name) => `${uid}-${name}`;
    const state = {
      d: START.d,
      seed: START.seed,
      x: randomVector(START.d, START.seed),
      placement: START.placement,
      norm: START.norm,
      eps: Number(START.eps),
      scale: START.scale,
      depth: START.depth,
    };
    const status = el("p", { class: "rn-vw-status", role: "status", "aria-live": "polite" });
    const problems = new Map(); // control name -> message

    function report(name, message) {
      if (message) problems.set(name, message);
      else problems.delete(name);
      status.textContent = [...problems.values()].join(" ");
    }

    // A typed number is used once valid; while it is not, the widget keeps the last valid
    // value and says so, and leaving the field puts that value back.
    function typed(input, name, parse, apply, current) {
      input.addEventListener("input", () => {
        const value = input.value.trim() === "" ? NaN : Number(input.value);
        const problem = parse(value);
        input.setAttribute("aria-invalid", problem ? "true" : "false");
        report(name, problem ? fillText(words.kept, { problem, value: current() }) : "");
        if (!problem) apply(value);
      });
      input.addEventListener("change", () => {
        if (input.getAttribute("aria-invalid") === "true") {
          input.value = String(current());
          input.setAttribute("aria-invalid", "false");
          report(name, "");
        }
      });
    }

    const integer = (what, lo, hi) => (v) =>
      Number.isInteger(v) && v >= lo && v <= hi
        ? ""
        : fillText(words.wholeNumber, { what, lo, hi });
    const finite = (what) => (v) => (Number.isFinite(v) ? "" : fillText(words.number, { what }));
    const positive = (v) => (Number.isFinite(v) && v > 0 ? "" : words.positive);
    const oneOf = (what, options) => (v) =>
      options.some((o) => o.id === v)
        ? ""
        : fillText(words.oneOf, { what, options: options.map((o) => o.id).join(", ") });

    // The link's settings (LINK, at the top): each must pass the check a typed value
    // passes; one that does not is left out and said, and its control keeps the default.
    const linkChecks = {
      placement: oneOf("placement", PLACEMENTS),
      norm: oneOf("norm", NORMS),
      s: finite("s"),
      d: integer("d", DIM.min, DIM.max),
      depth: integer("N", DEPTH.min, DEPTH.max),
      seed: integer(words.seedName, 0, SEED_MAX),
      eps: positive,
    };
    const keptName = (field, value) =>
      field === "placement" || field === "norm" ? words[`${field}.${value}`] : value;

    function readLink(search) {
      const params = new URLSearchParams(search);
      for (const { key, field, control, kind } of LINK) {
        if (!params.has(key)) continue;
        const text = params.get(key);
        const trimmed = text.trim();
        const value = kind === "option" ? trimmed : DECIMAL.test(trimmed) ? Number(trimmed) : NaN;
        const problem = linkChecks[key](value);
        if (!problem) {
          state[field] = value;
          continue;
        }
        const came = text.length > LINK_TEXT_MAX ? `${text.slice(0, LINK_TEXT_MAX)}…` : text;
        report(control, fillText(words.kept, {
          problem: fillText(words.fromLink, { key, value: came, problem }),
          value: keptName(field, state[field]),
        }));
      }
      state.x = randomVector(state.d, state.seed);
    }
    readLink(window.location.search);

    // A slider and a typed number for one value.
    function pair(name, label, range, parse, apply, current) {
      const slider = el("input", {
        type: "range",
        id: id(`${name}-range`),
        min: range.min,
        max: range.max,
        step: range.step || 1,
        value: current(),
        "aria-label": label,
        "data-control": `${name}-range`,
      });
      const box = el("input", {
        type: "number",
        id: id(`${name}-number`),
        step: "any",
        value: current(),
        inputmode: "decimal",
        "aria-label": fillText(words.typed, { label }),
        "data-control": `${name}-number`,
      });
      slider.addEventListener("input", () => {
        box.value = slider.value;
        box.setAttribute("aria-invalid", "false");
        report(name, "");
        apply(Number(slider.value));
      });
      const set = (v) => {
        slider.value = String(v);
        apply(v);
      };
      typed(box, name, parse, set, current);
      const sync = () => {
        slider.value = String(current());
        box.value = String(current());
        box.setAttribute("aria-invalid", "false");
        report(name, "");
      };
      return { slider, box, sync };
    }

    const row = (label, p) =>
      el("div", { class: "rn-vw-row rn-vw-setting" },
        el("label", { for: p.slider.id }, label), p.slider, p.box);

    // Controls -----------------------------------------------------------------------------
    const dim = pair("d", words.dimension, DIM, integer("d", DIM.min, DIM.max),
      (v) => setDimension(v), () => state.d);
    const entries = el("div", { class: "rn-vw-entries" });
    let entryPairs = [];

    function buildEntries() {
      entryPairs = state.x.map((_, i) => {
        const set = (v) => {
          state.x[i] = v;
          render();
        };
        return pair(`x${i}`, `x${i + 1}`, ENTRY, finite(`x${i + 1}`), set, () => state.x[i]);
      });
      entries.replaceChildren(
        ...entryPairs.map((p, i) =>
          el("div", { class: "rn-vw-row" },
            el("label", { for: p.slider.id }, "x", el("sub", {}, String(i + 1))),
            p.slider, p.box)),
      );
    }

    function setDimension(d) {
      // keep the first entries; new ones start at 0
      state.x = Array.from({ length: d }, (_, i) => (i < state.x.length ? state.x[i] : 0));
      state.d = d;
      for (const name of [...problems.keys()]) if (/^x\d+$/.test(name)) report(name, "");
      buildEntries();
      render();
    }

    const seedBox = el("input", {
      type: "number",
      id: id("seed"),
      min: 0,
      max: SEED_MAX,
      step: 1,
      value: state.seed,
      inputmode: "numeric",
      "data-control": "seed",
    });
    function draw() {
      state.x = randomVector(state.d, state.seed);
      for (const p of entryPairs) p.sync();
      render();
    }
    const setSeed = (v) => {
      state.seed = v;
      draw();
    };
    typed(seedBox, "seed", integer(words.seedName, 0, SEED_MAX), setSeed, () => state.seed);
    const nextSeed = () => {
      state.seed = state.seed >= SEED_MAX ? 0 : state.seed + 1;
      seedBox.value = String(state.seed);
      seedBox.setAttribute("aria-invalid", "false");
      report("seed", "");
      draw();
    };
    const randomButton = el("button",
      { type: "button", class: "md-button", "data-control": "random", onclick: nextSeed },
      words.random);

    function radios(name, legend, options, key) {
      const choose = (event) => {
        state[key] = event.target.value;
        report(name, ""); // a value the link gave and the widget left out is now replaced
        render();
      };
      return el("fieldset", { class: "rn-vw-radios", "data-control": name },
        el("legend", {}, legend),
        options.map((o) =>
          el("label", {},
            el("input", {
              type: "radio",
              name: id(name),
              value: o.id,
              checked: state[key] === o.id,
              onchange: choose,
            }),
            " ",
            o.formula ? [o.name, " ", el("code", {}, o.formula)] : o.name)),
      );
    }

    const epsBox = el("input", {
      type: "number",
      id: id("eps"),
      step: "any",
      min: 0,
      value: state.eps === Number(START.eps) ? START.eps : String(state.eps),
      inputmode: "decimal",
      "data-control": "eps",
    });
    const setEps = (v) => {
      state.eps = v;
      render();
    };
    typed(epsBox, "eps", positive, setEps, () => state.eps);

    const setScale = (v) => {
      state.scale = v;
      render();
    };
    const scale = pair("scale", words.scaleShort, SCALE, finite("s"), setScale, () => state.scale);
    const setDepth = (v) => {
      state.depth = v;
      render();
    };
    const depth = pair("depth", words.depthShort, DEPTH, integer("N", DEPTH.min, DEPTH.max),
      setDepth, () => state.depth);

    const controls = el("div", { class: "rn-vw-controls" },
      row(words.dimension, dim),
      el("fieldset", { class: "rn-vw-vector" },
        el("legend", {}, words.vector),
        el("div", { class: "rn-vw-random" },
          el("label", { for: seedBox.id }, words.seed), seedBox, randomButton),
        entries),
      radios("placement", words.placement, placements, "placement"),
      radios("norm", words.norm, norms, "norm"),
      el("div", { class: "rn-vw-row rn-vw-eps" },
        el("label", { for: epsBox.id }, words.eps), epsBox),
      row(words.scale, scale),
      row(words.depth, depth),
      status,
    );

    // Output -------------------------------------------------------------------------------
    const summary = el("p", { class: "rn-vw-summary", id: id("summary") });
    const description = el("p", { class: "rn-vw-description", id: id("description") },
      words.description);
    const stagesBox = el("div", {
      class: "rn-vw-stages",
      role: "group",
      "aria-describedby": `${id("summary")} ${id("description")}`,
    });
    const depthBox = el("div", { class: "rn-vw-depth" });

    function stagePanel(i, count, label, v, scaleMax) {
      const [mean, std] = meanStd(v);
      const bars = Array.from(v, (t, j) => {
        const width = Number.isFinite(t) && scaleMax > 0 ? (Math.abs(t) / scaleMax) * 50 : 0;
        const bar = el("span", {
          class: `rn-vw-bar ${t < 0 ? "rn-vw-neg" : "rn-vw-pos"}`,
          style: `left:${t < 0 ? 50 - width : 50}%;width:${width}%`,
        });
        return el("li", {},
          el("span", { class: "rn-vw-index" }, String(j + 1)),
          el("span", { class: "rn-vw-track", "aria-hidden": "true" }, bar),
          num(`stage.${i}.entry.${j}`, t));
      });
      const said = fillText(words.stageLabel, {
        stage: i + 1, count, label, values: v.length, mean: format(mean), std: format(std),
      });
      return el("figure", { class: "rn-vw-stage", "data-stage": i, "aria-label": said },
        el("figcaption", {},
          el("code", { class: "rn-vw-label", "data-label": label }, label),
          el("span", { class: "rn-vw-stats" }, fill(words.stats, {
            mean: num(`stage.${i}.mean`, mean), std: num(`stage.${i}.std`, std),
          }))),
        el("ol", { class: "rn-vw-bars" }, bars),
      );
    }

    function depthChart(stds) {
      const finiteStds = stds.filter(Number.isFinite);
      const lo = finiteStds.length ? Math.min(...finiteStds) : NaN;
      const hi = finiteStds.length ? Math.max(...finiteStds) : NaN;
      const [W, H, pad] = [640, 200, 12];
      const shown = (t) => Number.isFinite(t) && t > 0; // a log axis has no room for 0
      const logs = stds.filter(shown).map(Math.log10);
      const [logLo, logHi] = [Math.min(...logs), Math.max(...logs)];
      const span = logHi - logLo;
      const xAt = (l) => (pad + ((W - 2 * pad) * l) / Math.max(1, stds.length - 1)).toFixed(1);
      const yAt = (t) =>
        (span > 1e-12 ? H - pad - ((H - 2 * pad) * (Math.log10(t) - logLo)) / span : H / 2)
          .toFixed(1);
      const segments = [[]]; // the line breaks where a value cannot be drawn
      stds.forEach((t, l) => {
        if (shown(t)) segments[segments.length - 1].push(`${xAt(l)},${yAt(t)}`);
        else segments.push([]);
      });
      const layers = stds.length - 1;
      const placement = placements.find((p) => p.id === state.placement).name;
      const svg = el("svg", {
        class: "rn-vw-chart",
        viewBox: `0 0 ${W} ${H}`,
        role: "img",
        "aria-label": fillText(words.chartLabel, { layers, placement }),
      },
        svgEl("line", { class: "rn-vw-axis", x1: pad, y1: H - pad, x2: W - pad, y2: H - pad }),
        svgEl("line", { class: "rn-vw-axis", x1: pad, y1: pad, x2: pad, y2: H - pad }),
        segments.filter((points) => points.length).map((points) =>
          svgEl("polyline", { class: "rn-vw-line", points: points.join(" ") })),
        stds.map((t, l) =>
          shown(t) ? svgEl("circle", { class: "rn-vw-dot", cx: xAt(l), cy: yAt(t), r: 3.5 })
            : null),
      );
      return el("figure", {},
        svg,
        el("figcaption", {}, fill(words.chartCaption, {
          layers, placement, min: num("depth.min", lo), max: num("depth.max", hi),
        })),
        el("ol", { class: "rn-vw-depth-list" },
          stds.map((t, l) =>
            el("li", {},
              el("span", { class: "rn-vw-layer" }, fillText(words.layer, { layer: l })), " ",
              num(`depth.std.${l}`, t)))),
      );
    }

    function render() {
      const x = Float64Array.from(state.x);
      const settings = [state.placement, state.norm, state.eps, state.scale];
      const stages = connectionStages(data, x, ...settings);
      const scaleMax = Math.max(0, ...stages.flatMap(([, v]) =>
        Array.from(v, Math.abs).filter(Number.isFinite)));
      const placement = placements.find((p) => p.id === state.placement);
      const norm = norms.find((m) => m.id === state.norm);
      const chain = stages.flatMap(([label], i) => [i ? " → " : "", el("code", {}, label)]);
      const template = state.placement === "none" ? words.summaryNoNorm : words.summary;
      summary.replaceChildren(
        ...fill(template, { placement: placement.name, norm: norm.name, stages: chain }).flat());
      stagesBox.replaceChildren(
        ...stages.map(([label, v], i) => stagePanel(i, stages.length, label, v, scaleMax)));
      depthBox.replaceChildren(depthChart(streamStds(data, x, ...settings, state.depth)));
    }

    buildEntries();
    root.replaceChildren(
      controls,
      el("div", { class: "rn-vw-output" },
        el("p", { class: "rn-vw-heading" }, words.stagesHeading),
        summary, description, stagesBox,
        el("p", { class: "rn-vw-heading" }, words.depthHeading),
        depthBox),
    );
    render();
    root.dataset.mounted = "true";
  }

  let dataPromise = null;
  const loadData = () => {
    dataPromise = dataPromise || fetch(DATA_URL).then((r) => {
      if (!r.ok) throw new Error(`${DATA_URL}: HTTP ${r.status}`);
      return r.json();
    });
    return dataPromise;
  };

  function mountAll() {
    const roots = [...document.querySelectorAll(".rn-vector-widget:not([data-mounted])")];
    if (!roots.length) return;
    const words = new Map(roots.map((root) => [root, readStrings(root)]));
    for (const root of roots) root.dataset.mounted = "loading"; // mount each one once
    loadData().then(
      (data) => roots.forEach((root) => mount(root, data, words.get(root))),
      (err) => {
        dataPromise = null; // the next page tries again
        for (const root of roots) {
          root.textContent = fillText(words.get(root).loadError, { error: err.message });
        }
        console.error(err);
      },
    );
  }

  // For the handbook's tests, and for a reader's console.
  window.ResNormVectorWidget = {
    erf, gelu, format, randomVector, mulberry32, connectionStages, streamStds, loadData,
    STRINGS, readStrings, mountAll,
  };

  if (typeof document$ !== "undefined") document$.subscribe(mountAll);
  else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else mountAll();
})();
