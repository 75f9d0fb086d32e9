// QKStepThrough: for one head and one query token, each step of attention in its own panel: q and the keys as colour
// strips, q ⊙ k, q·k, the scaling by 1/√d, the position bias (only for models that add one: T5's relative-position
// bias with each key's bucket, an ALiBi-style linear bias), the softmax, and the weighted sum of the values.
// Mirrors attnwidgets/widgets/qk.py. Only the (layer, head) on screen crosses from Python; others are fetched on
// demand and kept in the page. Every number comes from the model (captured in attnwidgets/runner/qk.py).
// A long capture (`_meta.long`, more than 512 keys) crosses one query at a time over a `window` of keys plus a few
// "far" keys outside it (attnwidgets/viewdata/windows.py: qk_window); `keys` says which key each row is.

import { type Packed, decode } from "./shared/buffers";
import { type DivergingName, absMax, divergingCss } from "./shared/diverging";
import { controlGroup, h, listen, resetControls, select } from "./shared/dom";
import { fitLabel, fitToken, labelRoom, prepareCanvas, textMeasurer } from "./shared/draw";
import { exportButtons, safeName } from "./shared/export";
import { fitWatcher } from "./shared/fit";
import { type RenderProps, onModel, saveTraits } from "./shared/model";
import { Requester } from "./shared/requests";
import { typedInControl } from "./shared/selection";
import { isolate, tokenLabel, userText } from "./shared/text";
import { type Theme, applyTheme, theme } from "./shared/theme";
import { hideTooltip, showTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

/** Python traits of QKStepThrough (attnwidgets/widgets/qk.py). */
export interface QKTraits {
  layer: number;
  head: number;
  query: number;
  window: number[]; // [start, stop]: the key positions shown
  colormap: string; // "" = the theme's diverging scale; "rdbu" | "puor"
  theme: string;
  _meta: {
    title: string;
    stack: string;
    layers: number[];
    n_heads: number;
    n_kv_heads: number;
    head_dim: number;
    scaling: number;
    tokens: string[];
    key_tokens: string[];
    long?: boolean; // shown in windows only (more than 512 keys)
    bias?: boolean; // the model adds a position bias to the scaled logits: a "+ bias" panel
    buckets?: boolean; // the bias is T5's: each key's relative-position bucket is shown
  };
  _payload: { key: string; arrays: Record<string, Packed> } | Record<string, never>;
  _error: string;
}

/** One head's arrays: q, output (n, d); k, v (m, d); logits, scaled, weights, mask (n, m); bias, bucket (n, m) when
 * the model adds a position bias. */
export interface HeadData {
  key: string;
  n: number;
  m: number;
  d: number;
  arrays: Record<string, Float32Array>;
  pos: number[] | null; // a window: the key position of each row (the window's keys, then the far keys)
  outside: number; // a window: the weight on keys outside it
}

export function headData(key: string, arrays: Record<string, Packed>): HeadData {
  const out: Record<string, Float32Array> = {};
  for (const [name, p] of Object.entries(arrays)) out[name] = decode(p).data;
  const [n, m] = arrays.logits.shape;
  const pos = out.keys ? Array.from(out.keys, (x) => Math.round(x)) : null;
  return { key, n, m, d: arrays.q.shape[1], arrays: out, pos, outside: out.outside?.[0] ?? 0 };
}

/** The key position of row j (a window's rows are its keys, then the far keys). */
export function keyPos(hd: HeadData, j: number): number {
  return hd.pos ? hd.pos[j] : j;
}

/** What the panels show for query i: slices of a head's arrays (a window holds the one query's row). */
export function queryRow(hd: HeadData, query: number) {
  const i = hd.pos ? 0 : query;
  const { m, d, arrays: a } = hd;
  const row = (x: Float32Array, w: number) => x.subarray(i * w, (i + 1) * w);
  const mask = row(a.mask, m);
  const bias = a.bias ? row(a.bias, m) : null;
  const scaled = row(a.scaled, m);
  return {
    q: row(a.q, d),
    out: row(a.output, d),
    logits: row(a.logits, m),
    scaled,
    bias,
    bucket: a.bucket ? Array.from(row(a.bucket, m), (x) => Math.round(x)) : null,
    // what the softmax is taken of: scaled + bias
    biased: bias ? Float32Array.from(scaled, (x, j) => x + bias[j]) : scaled,
    weights: row(a.weights, m),
    allowed: Array.from(mask, (v) => v > 0.5),
  };
}

export interface Geometry {
  rh: number; // row height
  top: number; // y of the first key row
  cw: number; // strip cell width
  label: number; // label column width (panel 1)
  bar: number; // bar width (panels 3-5)
  num: number; // number column width
}

/** Panel widths (CSS px, canvases only) of geometry `g` for head size `d`, in the order of `panels(bias)`. */
export function panelWidths(g: Geometry, d: number, bias = false): number[] {
  const strip = d * g.cw + 8;
  const bars = g.bar + g.num + 8;
  return bias
    ? [g.label + strip, strip, bars, bars, bars + tagWidth(g), bars, strip]
    : [g.label + strip, strip, bars, bars, bars, strip];
}

/** The width of the bucket column ("b12") the "+ bias" panel adds after its numbers. */
export function tagWidth(g: Geometry): number {
  return Math.round(g.num * 0.55);
}

/** Each panel's border, padding and the gap after it (QK_CSS): what the row adds to the canvases' widths. */
export const PANEL_CHROME = 10 + 8;

/**
 * Geometry `g` shrunk so that all six panels (seven with a bias) of `m` key rows fit `room` (the canvases' box: width
 * of the row, height of a canvas), at most the natural size: rows get shorter, then bars, numbers, labels and strips
 * narrower (font follows: `fontFor`). Pure, for tests.
 */
export function fitGeometry(
  g: Geometry,
  d: number,
  m: number,
  room: { width: number; height: number },
  bias = false,
): Geometry {
  const rh = Math.max(6, Math.min(g.rh, Math.floor((room.height - 4) / (m + 1.9))));
  // Strips keep their cell width while the labels, bars and numbers can give way (to 70 %); then strips narrow.
  const nPanels = bias ? 7 : 6;
  const nBars = bias ? 4 : 3;
  const free = room.width - PANEL_CHROME * nPanels - nPanels * 8 - (nBars - 3) * 8;
  const rest = g.label + nBars * (g.bar + g.num) + (bias ? tagWidth(g) : 0);
  let cw = g.cw;
  let s = 1;
  for (; cw >= 1; cw--) {
    s = Math.min(1, (free - 3 * d * cw) / rest);
    if (s >= 0.7 || cw === 1) break;
  }
  s = Math.max(0.4, s);
  return {
    rh,
    top: Math.round(rh * 1.9),
    cw: Math.max(1, cw),
    label: Math.floor(g.label * s),
    bar: Math.floor(g.bar * s),
    num: Math.floor(g.num * s),
  };
}

/** Font size for geometry `g`: the theme's, smaller when rows are short or the number column narrow. */
export function fontFor(t: Theme, g: Geometry): number {
  return Math.max(8, Math.min(t.font, g.rh - 3, Math.floor(g.num / 3.1)));
}

const PANELS = [
  ["qk", "query q, keys k", "the query vector (top) and every key vector, one cell per component"],
  ["prod", "q ⊙ k", "elementwise product: the sum of a row is q·k"],
  ["dot", "q · k", "dot product of the query with each key"],
  [
    "scaled",
    "× 1/√d",
    "q·k times the model's scaling (1/√d for most models; T5 folds it into its weights: × 1)",
  ],
  [
    "bias",
    "+ bias",
    "the position bias the model adds to the scaled logits (T5: one learned number per head and relative-position " +
      "bucket; ALiBi: slope × distance)",
  ],
  [
    "softmax",
    "softmax",
    "softmax over the keys the query may see (of the scaled logits + bias): the weights",
  ],
  [
    "sum",
    "Σ weight × v",
    "each value vector (faded by its weight) and their weighted sum (top): the head's output",
  ],
] as const;

const NUMBERS = "①②③④⑤⑥⑦";

/**
 * The panels shown: the "+ bias" panel only for a model that adds a position bias; titles numbered in order. The
 * scaling panel says "× 1/√d" when the model scales by 1/√d (`headDim`), else its factor ("× 1" for T5).
 */
export function panels(
  bias: boolean,
  scaling?: number,
  headDim?: number,
): Array<{ id: string; title: string; help: string }> {
  const rootD =
    scaling !== undefined && headDim !== undefined && Math.abs(scaling - 1 / Math.sqrt(headDim)) < 1e-6;
  return PANELS.filter(([id]) => bias || id !== "bias").map(([id, title, help], n) => ({
    id,
    title: `${NUMBERS[n]} ${id === "scaled" && scaling !== undefined && !rootD ? `× ${Number(scaling.toPrecision(3))}` : title}`,
    help,
  }));
}

function render({ model, el }: RenderProps<QKTraits>): () => void {
  const shell = widgetShell(model, el, "aw-qk", QK_CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const requester = new Requester(model);
  const caption = h("div", { className: "aw-muted aw-qk-caption", "data-export-text": true });
  const row = h("div", { className: "aw-qk-panels" });
  const canvases: Record<string, HTMLCanvasElement> = {};
  const hasBias = () => Boolean(model.get("_meta").bias);
  let shown = ""; // what the panels were built for: bias, scaling, head size
  /** (Re)build the panels: the "+ bias" panel appears only when the capture has a bias. */
  function buildPanels(): boolean {
    const m = model.get("_meta");
    const want = `${hasBias()}/${m.scaling}/${m.head_dim}`;
    if (shown === want) return false;
    shown = want;
    row.replaceChildren();
    for (const key of Object.keys(canvases)) delete canvases[key];
    for (const { id, title: head, help } of panels(hasBias(), m.scaling, m.head_dim)) {
      const canvas = h("canvas", { "data-testid": `qk-${id}` });
      canvases[id] = canvas;
      row.append(
        h(
          "div",
          { className: "aw-qk-panel", title: help },
          h("div", { className: "aw-qk-head", text: head, "data-export-text": true }),
          canvas,
        ),
      );
    }
    return true;
  }
  buildPanels();
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, caption, row, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let data: HeadData | null = null;
  let geo: Geometry | null = null;
  let hoverRow = -1;

  const meta = () => model.get("_meta");
  const selfAttention = () => meta().stack !== "cross";
  /** Is the view a window (a long capture, or a window narrower than the keys)? */
  const windowed = (): boolean => {
    const w = model.get("window") ?? [];
    return w.length === 2 && (Boolean(meta().long) || w[0] !== 0 || w[1] !== meta().key_tokens.length);
  };
  // The same key as QKStepThrough._view_key in Python, so the first payload is recognised.
  const viewKey = (): string => {
    const base = `${model.get("layer")}/${model.get("head")}`;
    const w = model.get("window");
    return windowed() ? `${base}/${model.get("query")}/${w[0]}-${w[1]}` : base;
  };

  const controls = controlGroup(cleanups);
  function buildControls(): void {
    resetControls(controls, bar);
    const m = meta();
    const layerSel = select(
      m.layers.map((l) => [String(l), String(l)]),
      String(model.get("layer")),
      "layer",
    );
    layerSel.dataset.testid = "layer-select";
    controls.push(listen(layerSel, "change", () => update({ layer: Number(layerSel.value) })));
    const heads: Array<[string, string]> = [];
    for (let i = 0; i < m.n_heads; i++) heads.push([String(i), String(i)]);
    const headSel = select(heads, String(model.get("head")), "head");
    headSel.dataset.testid = "head-select";
    controls.push(listen(headSel, "change", () => update({ head: Number(headSel.value) })));
    const querySel = select(
      m.tokens.map((t, i) => [String(i), `${i}: ${isolate(tokenLabel(t, 32))}`]),
      String(model.get("query")),
      "query token",
    );
    querySel.dataset.testid = "query-select";
    controls.push(listen(querySel, "change", () => update({ query: Number(querySel.value) })));
    const nav: HTMLElement[] = [];
    if (windowed()) {
      const nk = m.key_tokens.length;
      const w = model.get("window");
      const prev = h("button", {
        type: "button",
        "data-testid": "window-prev",
        title: "previous keys",
        text: "◀",
      });
      const next = h("button", {
        type: "button",
        "data-testid": "window-next",
        title: "next keys",
        text: "▶",
      });
      prev.disabled = w[0] <= 0;
      next.disabled = w[1] >= nk;
      const step = (dir: number) => {
        const size = w[1] - w[0];
        const start = Math.max(0, Math.min(nk - size, w[0] + dir * size));
        saveTraits(model, { window: [start, start + size] });
      };
      controls.push(
        listen(prev, "click", () => step(-1)),
        listen(next, "click", () => step(1)),
      );
      nav.push(
        h(
          "span",
          { className: "aw-window-nav" },
          prev,
          h("span", { "data-testid": "window-label", text: `keys ${w[0]}–${w[1] - 1} of ${nk}` }),
          next,
        ),
      );
    }
    bar.append(
      h("label", {}, "layer", layerSel),
      h("label", {}, "head", headSel),
      h("label", {}, "query", querySel),
      ...nav,
      exportButtons(root, () => safeName(`qk_${model.get("layer")}_${model.get("head")}`), controls),
    );
  }

  function update(changes: Partial<Pick<QKTraits, "layer" | "head" | "query">>): void {
    saveTraits(model, changes);
    buildControls();
    refresh();
  }

  /** The label of row j: the key token, with its position in a window ("far #p" for a far key). */
  function rowLabel(hd: HeadData, j: number, nWin: number): string {
    const keys = meta().key_tokens;
    const p = keyPos(hd, j);
    if (!hd.pos) return keys[p] ?? "";
    return `${j >= nWin ? "far #" : ""}${p} ${keys[p] ?? ""}`;
  }

  function geometry(t: Theme, d: number, m: number, labels: string[]): Geometry {
    const big = t.name === "lecture";
    const rh = m > 96 ? (big ? 18 : 12) : big ? 28 : 18;
    const probe = textMeasurer();
    return {
      rh,
      top: Math.round(rh * 1.9),
      cw: Math.max(1, Math.min(6, Math.floor(96 / d))), // d = 32: 3 px; the whole view fits a notebook column
      label: labelRoom(probe, [...labels, "q · query"], t, big ? 190 : 140),
      bar: big ? 76 : 70,
      num: big ? 62 : 46,
    };
  }

  function strip(
    ctx: CanvasRenderingContext2D,
    x: number,
    y: number,
    g: Geometry,
    v: ArrayLike<number>,
    vmax: number,
    map: DivergingName,
    alpha = 1,
  ): void {
    ctx.globalAlpha = alpha;
    for (let c = 0; c < v.length; c++) {
      ctx.fillStyle = divergingCss(map, v[c], vmax);
      ctx.fillRect(x + c * g.cw, y + 1, g.cw, g.rh - 2);
    }
    ctx.globalAlpha = 1;
  }

  function paint(): void {
    if (!data) return;
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const map = (model.get("colormap") || (t.name === "lecture" ? "puor" : "rdbu")) as DivergingName;
    const m = meta();
    const i = data.pos ? model.get("query") : Math.min(model.get("query"), data.n - 1);
    const r = queryRow(data, i);
    const { d } = data;
    const keys = m.key_tokens;
    const nWin = data.pos ? model.get("window")[1] - model.get("window")[0] : data.m;
    const labels = Array.from({ length: data.m }, (_, j) => rowLabel(data as HeadData, j, nWin));
    const room = fit.room(row); // fitted: all six panels side by side, every key row on screen
    const natural = geometry(t, d, data.m, labels);
    const heads = row.querySelectorAll<HTMLElement>(".aw-qk-head");
    const g = room
      ? fitGeometry(
          natural,
          d,
          data.m,
          {
            width: room.width,
            height:
              room.height - (row.getBoundingClientRect().height - canvases.qk.getBoundingClientRect().height),
          },
          Boolean(r.bias),
        )
      : natural;
    geo = g;
    const hgt = g.top + g.rh * data.m + 4;
    const font = room ? fontFor(t, g) : Math.min(t.font, g.rh - 3);
    // A panel's title wraps to its canvas's width when fitted (the titles made the panels wider than the canvases).
    panelWidths(g, d, Boolean(r.bias)).forEach((w, n) => {
      if (heads[n]) heads[n].style.maxWidth = room ? `${w}px` : "";
    });

    const k = data.arrays.k;
    const v = data.arrays.v;
    const kRow = (j: number) => k.subarray(j * d, (j + 1) * d);
    const vRow = (j: number) => v.subarray(j * d, (j + 1) * d);
    const rowY = (j: number) => g.top + j * g.rh;
    const setup = (id: string, w: number) => {
      const ctx = prepareCanvas(canvases[id], w, hgt);
      ctx.fillStyle = t.bg;
      ctx.fillRect(0, 0, w, hgt);
      ctx.font = `${font}px ${t.fontFamily}`;
      ctx.textBaseline = "middle";
      if (hoverRow >= 0) {
        ctx.fillStyle = t.grid;
        ctx.globalAlpha = 0.45;
        ctx.fillRect(0, rowY(hoverRow), w, g.rh);
        ctx.globalAlpha = 1;
      }
      return ctx;
    };
    const maskedRow = (ctx: CanvasRenderingContext2D, j: number, x: number, w: number) => {
      ctx.fillStyle = t.grid;
      ctx.globalAlpha = 0.35;
      ctx.fillRect(x, rowY(j) + 1, w, g.rh - 2);
      ctx.globalAlpha = 1;
    };
    const stripW = d * g.cw;
    const showLabels = g.rh >= 12;

    // ① q and k strips, with token labels (the query's own row marked).
    const qkMax = absMax(r.q, k);
    let ctx = setup("qk", g.label + stripW + 8);
    ctx.textAlign = "right";
    ctx.fillStyle = t.accent;
    ctx.fillText(
      isolate(fitLabel(ctx, `q · ${isolate(tokenLabel(m.tokens[i] ?? ""))}`, g.label - 6)),
      g.label - 4,
      g.rh * 0.5 + 1,
    );
    strip(ctx, g.label, 0, g, r.q, qkMax, map);
    for (let j = 0; j < data.m; j++) {
      if (showLabels) {
        const p = keyPos(data, j);
        ctx.fillStyle = selfAttention() && p === i ? t.accent : j >= nWin ? t.muted : t.fg;
        ctx.fillText(fitToken(ctx, labels[j], g.label - 6, 28), g.label - 4, rowY(j) + g.rh / 2);
      }
      if (j === nWin && j > 0) {
        ctx.fillStyle = t.muted;
        ctx.fillRect(0, rowY(j), g.label + stripW, 1);
      }
      strip(ctx, g.label, rowY(j), g, kRow(j), qkMax, map, r.allowed[j] ? 1 : 0.25);
    }
    canvases.qk.dataset.vmax = String(qkMax);

    // ② q ⊙ k
    const prods = Array.from({ length: data.m }, (_, j) => {
      const kj = kRow(j);
      return Float32Array.from(r.q, (qc, c) => qc * kj[c]);
    });
    const prodMax = absMax(...prods);
    ctx = setup("prod", stripW + 8);
    for (let j = 0; j < data.m; j++)
      strip(ctx, 4, rowY(j), g, prods[j], prodMax, map, r.allowed[j] ? 1 : 0.25);

    // ③ q·k and ④ scaled: signed bars around a zero axis, numbers on the right.
    const bars = (id: string, values: Float32Array, fmt: (x: number) => string, tags?: string[]) => {
      const tw = tags ? tagWidth(g) : 0; // a column of tags (T5's buckets) after the numbers
      const w = g.bar + g.num + 8 + tw;
      const c = setup(id, w);
      const vmax = absMax(values.filter((_, j) => r.allowed[j])) || 1;
      const zero = 4 + g.bar / 2;
      c.fillStyle = t.muted;
      c.textAlign = "center";
      c.fillText(`±${fmt(vmax)}`, zero, g.rh * 0.5 + 1);
      c.fillStyle = t.grid;
      c.fillRect(zero, g.top - 2, 1, g.rh * data!.m + 4);
      c.textAlign = "right";
      for (let j = 0; j < data!.m; j++) {
        if (!r.allowed[j]) {
          maskedRow(c, j, 4, g.bar);
          if (showLabels) {
            c.fillStyle = t.muted;
            c.fillText("masked", w - 4, rowY(j) + g.rh / 2);
          }
          continue;
        }
        const x = values[j];
        const len = (Math.abs(x) / vmax) * (g.bar / 2);
        c.fillStyle = divergingCss(map, x, vmax * 0.6);
        c.fillRect(x >= 0 ? zero : zero - len, rowY(j) + 2, Math.max(1, len), g.rh - 4);
        if (showLabels) {
          c.fillStyle = t.fg;
          c.fillText(fmt(x), w - 4 - tw, rowY(j) + g.rh / 2);
          if (tags) {
            c.fillStyle = t.muted;
            c.fillText(tags[j], w - 4, rowY(j) + g.rh / 2);
          }
        }
      }
    };
    bars("dot", r.logits, (x) => x.toFixed(2));
    bars("scaled", r.scaled, (x) => x.toFixed(3));
    canvases.scaled.dataset.scaling = String(m.scaling);
    // + bias: the bias bars, with T5's bucket of each key after its number ("+1.25 b3").
    if (r.bias && canvases.bias) {
      const bias = r.bias;
      const bucket = r.bucket;
      bars("bias", bias, (x) => x.toFixed(2), bucket ? bucket.map((b) => `b${b}`) : undefined);
      Object.assign(canvases.bias.dataset, {
        bias: Array.from(bias, (x) => x.toFixed(6)).join(","),
        buckets: bucket ? bucket.join(",") : "",
      });
    }

    // ⑤ softmax: bars from 0 to 1, the strongest key outlined.
    const w5 = g.bar + g.num + 8;
    ctx = setup("softmax", w5);
    let best = -1;
    for (let j = 0; j < data.m; j++)
      if (r.allowed[j] && (best < 0 || r.weights[j] > r.weights[best])) best = j;
    ctx.fillStyle = t.muted;
    ctx.textAlign = "left";
    ctx.fillText("0", 4, g.rh * 0.5 + 1);
    ctx.textAlign = "right";
    ctx.fillText("1", 4 + g.bar, g.rh * 0.5 + 1);
    for (let j = 0; j < data.m; j++) {
      if (!r.allowed[j]) {
        maskedRow(ctx, j, 4, g.bar);
        continue;
      }
      ctx.fillStyle = t.grid;
      ctx.globalAlpha = 0.3;
      ctx.fillRect(4, rowY(j) + g.rh / 2, g.bar, 1);
      ctx.globalAlpha = 1;
      ctx.fillStyle = j === best ? t.accent : t.name === "lecture" ? "#0072b2" : "#2171b5";
      ctx.fillRect(4, rowY(j) + 2, Math.max(1, r.weights[j] * g.bar), g.rh - 4);
      if (showLabels) {
        ctx.fillStyle = t.fg;
        ctx.fillText(r.weights[j].toFixed(3), w5 - 4, rowY(j) + g.rh / 2);
      }
    }
    Object.assign(canvases.softmax.dataset, {
      top: String(g.top),
      rh: String(g.rh),
      view: `${model.get("layer")}/${model.get("head")}/${i}`,
      keys: data.pos ? data.pos.join(",") : "",
      argmax: String(best),
      weights: Array.from(r.weights, (x) => x.toFixed(6)).join(","),
    });

    // ⑥ the values, faded by weight, and their weighted sum on top.
    const vMax = absMax(v, r.out);
    const wMax = best >= 0 ? r.weights[best] : 1;
    ctx = setup("sum", stripW + 8);
    strip(ctx, 4, 0, g, r.out, vMax, map);
    ctx.strokeStyle = t.accent;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(3.5, 0.5, stripW + 1, g.rh - 1);
    for (let j = 0; j < data.m; j++) {
      if (r.allowed[j])
        strip(ctx, 4, rowY(j), g, vRow(j), vMax, map, 0.08 + 0.92 * (r.weights[j] / (wMax || 1)));
      else maskedRow(ctx, j, 4, stripW);
    }

    const kv =
      m.n_kv_heads < m.n_heads
        ? ` (key/value head ${Math.floor(model.get("head") / (m.n_heads / m.n_kv_heads))})`
        : "";
    title.textContent = `${userText(m.title)} · ${m.stack} attention · layer ${model.get("layer")} · head ${model.get("head")}`;
    caption.textContent = `query ${i} “${isolate(tokenLabel(m.tokens[i] ?? "", 24))}”${kv} · d = ${d} · scaling ${m.scaling.toPrecision(4)}${
      Math.abs(m.scaling - 1 / Math.sqrt(d)) < 1e-6 ? ` = 1/√${d}` : ""
    }${r.bias ? ` · + position bias${r.bucket ? " (bN: T5 relative-position bucket)" : ""}` : ""} · strongest key: “${best >= 0 ? isolate(tokenLabel(keys[keyPos(data, best)] ?? "", 24)) : "none"}”${
      data.pos
        ? ` · keys ${model.get("window")[0]}–${model.get("window")[1] - 1} of ${keys.length}, outside them ${(100 * data.outside).toFixed(1)} % of the weight`
        : ""
    }`;
  }

  function accept(hd: HeadData): void {
    data = hd;
    paint();
  }

  async function refresh(): Promise<void> {
    const key = viewKey();
    if (data && data.key === key) {
      paint();
      return;
    }
    const initial = model.get("_payload");
    if (initial && "key" in initial && initial.key === key) {
      accept(headData(key, initial.arrays));
      return;
    }
    try {
      const reply = await requester.get(key, {
        what: "qk",
        layer: model.get("layer"),
        head: model.get("head"),
        ...(windowed() ? { query: model.get("query"), window: [...model.get("window")] } : {}),
      });
      if (viewKey() !== key) return;
      const specs = (reply.content as { arrays: Array<Omit<Packed, "buffer"> & { name: string }> }).arrays;
      const arrays: Record<string, Packed> = {};
      specs.forEach((s, j) => {
        arrays[s.name] = { ...s, buffer: reply.buffers[j] };
      });
      accept(headData(key, arrays));
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  function rowAt(canvas: HTMLCanvasElement, e: MouseEvent): { j: number; x: number } | null {
    if (!geo || !data) return null;
    const rect = canvas.getBoundingClientRect();
    const y = e.clientY - rect.top;
    const j = Math.floor((y - geo.top) / geo.rh);
    if (y < geo.top || j < 0 || j >= data.m) return null;
    return { j, x: e.clientX - rect.left };
  }

  function tip(id: string, j: number, x: number): string {
    if (!data || !geo) return "";
    const m = meta();
    const i = data.pos ? model.get("query") : Math.min(model.get("query"), data.n - 1);
    const r = queryRow(data, i);
    const p = keyPos(data, j);
    const lines = [`key ${p} “${userText(m.key_tokens[p] ?? "")}” ← query “${userText(m.tokens[i] ?? "")}”`];
    const off = id === "qk" ? geo.label : 4;
    const c = Math.floor((x - off) / geo.cw);
    const d = data.d;
    if ((id === "qk" || id === "prod" || id === "sum") && c >= 0 && c < d) {
      const kc = data.arrays.k[j * d + c];
      const vc = data.arrays.v[j * d + c];
      if (id === "sum") lines.push(`v[${c}] = ${vc.toFixed(4)}   output[${c}] = ${r.out[c].toFixed(4)}`);
      else
        lines.push(
          `q[${c}] = ${r.q[c].toFixed(4)}   k[${c}] = ${kc.toFixed(4)}   q⊙k = ${(r.q[c] * kc).toFixed(4)}`,
        );
    }
    if (!r.allowed[j]) lines.push("masked: this query may not attend to this key");
    else {
      lines.push(`q·k = ${r.logits[j].toFixed(4)}`);
      lines.push(`× ${m.scaling.toPrecision(4)} = ${r.scaled[j].toFixed(4)}`);
      if (r.bias) {
        const b = r.bucket ? ` (bucket ${r.bucket[j]})` : "";
        lines.push(`+ bias ${r.bias[j].toFixed(4)}${b} = ${r.biased[j].toFixed(4)}`);
      }
      lines.push(`softmax = ${r.weights[j].toFixed(4)}`);
    }
    return lines.join("\n");
  }

  /** Hover listeners on every panel's canvas (again after the panels are rebuilt). */
  function listenPanels(): void {
    for (const { id } of panels(hasBias())) {
      const canvas = canvases[id];
      cleanups.push(
        listen(canvas, "mousemove", (e: MouseEvent) => {
          const hit = rowAt(canvas, e);
          if (!hit) {
            hideTooltip(tooltip);
            if (hoverRow !== -1) {
              hoverRow = -1;
              paint();
            }
            return;
          }
          showTooltip(tooltip, root, e, tip(id, hit.j, hit.x), { row: String(hit.j) }, false);
          if (hoverRow !== hit.j) {
            hoverRow = hit.j;
            paint();
          }
        }),
        listen(canvas, "mouseleave", () => {
          hideTooltip(tooltip);
          hoverRow = -1;
          paint();
        }),
      );
    }
    // Clicking a token in panel 1 makes it the query (self-attention: keys and queries are the same tokens).
    cleanups.push(
      listen(canvases.qk, "click", (e: MouseEvent) => {
        const hit = rowAt(canvases.qk, e);
        const p = hit && data ? keyPos(data, hit.j) : -1;
        if (hit && selfAttention() && p < meta().tokens.length) update({ query: p });
      }),
    );
  }
  listenPanels();
  cleanups.push(
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return; // arrows in a menu step its options, not the view
      const m = meta();
      const li = m.layers.indexOf(model.get("layer"));
      const head = model.get("head");
      if (e.key === "ArrowRight") update({ head: Math.min(m.n_heads - 1, head + 1) });
      else if (e.key === "ArrowLeft") update({ head: Math.max(0, head - 1) });
      else if (e.key === "ArrowDown") update({ layer: m.layers[Math.min(m.layers.length - 1, li + 1)] });
      else if (e.key === "ArrowUp") update({ layer: m.layers[Math.max(0, li - 1)] });
      else return;
      e.preventDefault();
    }),
  );

  const rebuild = () => {
    hideTooltip(tooltip); // it described the old head or query
    buildControls();
    refresh();
  };
  for (const ev of ["change:layer", "change:head", "change:query", "change:window"])
    cleanups.push(onModel(model, ev, rebuild));
  cleanups.push(
    onModel(model, "change:_meta", () => {
      requester.clear();
      data = null;
      if (buildPanels()) listenPanels();
      rebuild();
    }),
  );
  cleanups.push(onModel(model, "change:theme", paint));
  cleanups.push(onModel(model, "change:colormap", paint));
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
}

/** The QK view's own styles (added to the shared ones in its root by `widgetShell`). */
const QK_CSS = `
.aw-qk-panels { display: flex; gap: 8px; align-items: flex-start; overflow: auto; max-width: 100%; max-height: 75vh; }
.aw-qk-panels { align-items: stretch; }
/* every panel as tall as the tallest, its canvas at the bottom: the key rows line up even when a title wraps */
.aw-qk-panel { border: 1px solid var(--aw-muted); border-radius: 4px; padding: 4px; flex: none;
  display: flex; flex-direction: column; justify-content: flex-end; }
.aw-qk-head { font-weight: 600; margin-bottom: 4px; white-space: nowrap; }
.aw-qk-caption { margin: 2px 0 6px; }
.aw-window-nav { display: inline-flex; gap: 6px; align-items: center; font-variant-numeric: tabular-nums; }
.aw-fit .aw-qk-panels { gap: 6px; }
.aw-fit .aw-qk-panel { padding: 2px; }
.aw-fit .aw-qk-head { white-space: normal; font-size: calc(var(--aw-font) * 0.8); margin-bottom: 2px; }
.aw-fit .aw-qk-caption { margin: 0 0 2px; }
`;

export default { render };
