// QKStepThrough's state: pure functions from the traits and one head's arrays to what the panels draw (no DOM).
// What Python sends is typed by js/src/generated/wire.ts (attnwidgets/viewdata/views/qk.py); a long capture crosses
// one query over a `window` of keys plus a few "far" keys (attnwidgets/viewdata/windows.py: qk_window), and `keys`
// says which key each row is.

import { spanTokens } from "../../draw/span";
import type { QKArrays } from "../../generated/wire";
import { type Packed, decode } from "../../shared/buffers";
import { isolate, tokenLabel, userText } from "../../shared/text";
import type { Theme } from "../../shared/theme";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of QKStepThrough (attnwidgets/widgets/qk.py). */
export interface QKTraits {
  layer: number;
  head: number;
  query: number;
  selection: number[]; // selected query tokens (sorted): the panels step through one of them (span.oneQuery)
  window: number[]; // [start, stop]: the key positions shown
  colormap: string; // "" = the theme's diverging scale; "rdbu" | "puor"
  theme: string;
  _meta: QKMeta;
  _payload: PayloadOf<"qk"> | Record<string, never>;
  _error: string;
}

/** QKStepThrough's `_meta` (generated from attnwidgets/viewdata/views/qk.py): `long` when shown in windows only
 * (more than 512 keys), `bias` when the model adds a position bias (a "+ bias" panel), `buckets` when it is T5's. */
export type QKMeta = MetaOf<"qk">;

/** What the view shows: the traits that pick a head, a query and a window. */
export type QKView = Pick<QKTraits, "layer" | "head" | "query" | "window">;

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

export function headData(key: string, arrays: QKArrays | Record<string, Packed>): HeadData {
  const out: Record<string, Float32Array> = {};
  for (const [name, p] of Object.entries(arrays)) out[name] = decode(p).data;
  const [n, m] = arrays.logits.shape;
  const pos = out.keys ? Array.from(out.keys, (x) => Math.round(x)) : null;
  return { key, n, m, d: arrays.q.shape[1], arrays: out, pos, outside: out.outside?.[0] ?? 0 };
}

/** A reply's array specs joined with its buffers (one buffer per spec, in order). */
export function replyArrays(
  specs: Array<Omit<Packed, "buffer"> & { name: string }>,
  buffers: Packed["buffer"][],
): Record<string, Packed> {
  const arrays: Record<string, Packed> = {};
  specs.forEach((s, j) => {
    arrays[s.name] = { ...s, buffer: buffers[j] };
  });
  return arrays;
}

/** Is the view a window (a long capture, or a window narrower than the keys)? */
export function isWindowed(meta: QKMeta, window: number[] | null | undefined): boolean {
  const w = window ?? [];
  return w.length === 2 && (Boolean(meta.long) || w[0] !== 0 || w[1] !== meta.key_tokens.length);
}

/** The same key as QKStepThrough._view_key in Python, so the first payload is recognised. */
export function viewKey(meta: QKMeta, v: QKView): string {
  const base = `${v.layer}/${v.head}`;
  return isWindowed(meta, v.window) ? `${base}/${v.query}/${v.window[0]}-${v.window[1]}` : base;
}

/** The request for the head on screen (a window adds its query and keys). */
export function headRequest(meta: QKMeta, v: QKView): Record<string, unknown> {
  return {
    what: "qk",
    layer: v.layer,
    head: v.head,
    ...(isWindowed(meta, v.window) ? { query: v.query, window: [...v.window] } : {}),
  };
}

/** The window one page before (`dir` -1) or after (+1), clamped to the `nKeys` keys, its size kept. */
export function stepWindowRange(window: number[], nKeys: number, dir: number): [number, number] {
  const size = window[1] - window[0];
  const start = Math.max(0, Math.min(nKeys - size, window[0] + dir * size));
  return [start, start + size];
}

/** The head or layer an arrow key moves to (→ ← heads, ↓ ↑ layers, clamped); null for any other key. */
export function arrowStep(
  meta: Pick<QKMeta, "layers" | "n_heads">,
  layer: number,
  head: number,
  key: string,
): { head: number } | { layer: number } | null {
  const li = meta.layers.indexOf(layer);
  if (key === "ArrowRight") return { head: Math.min(meta.n_heads - 1, head + 1) };
  if (key === "ArrowLeft") return { head: Math.max(0, head - 1) };
  if (key === "ArrowDown") return { layer: meta.layers[Math.min(meta.layers.length - 1, li + 1)] };
  if (key === "ArrowUp") return { layer: meta.layers[Math.max(0, li - 1)] };
  return null;
}

/** The key position of row j (a window's rows are its keys, then the far keys). */
export function keyPos(hd: HeadData, j: number): number {
  return hd.pos ? hd.pos[j] : j;
}

/** The query shown: a window holds the one query asked for; a full head clamps it to its queries. */
export function queryIndex(hd: HeadData, query: number): number {
  return hd.pos ? query : Math.min(query, hd.n - 1);
}

/** How many rows of a head are the window's own keys (the rest are far keys); every row without a window. */
export function windowRows(hd: HeadData, window: number[]): number {
  return hd.pos ? window[1] - window[0] : hd.m;
}

/** The label of row j: the key token, with its position in a window ("far #p" for a far key). */
export function rowLabel(keyTokens: string[], hd: HeadData, j: number, nWin: number): string {
  const p = keyPos(hd, j);
  if (!hd.pos) return keyTokens[p] ?? "";
  return `${j >= nWin ? "far #" : ""}${p} ${keyTokens[p] ?? ""}`;
}

/** What the panels show for query i: slices of a head's arrays (a window holds the one query's row). */
export function queryRow(hd: HeadData, query: number) {
  const i = hd.pos ? 0 : query;
  const { m, d, arrays: a } = hd;
  const row = (x: Float32Array, w: number) => x.subarray(i * w, (i + 1) * w);
  const mask = row(a.mask, m);
  const bias = a.bias ? row(a.bias, m) : null;
  const scaled = row(a.scaled, m);
  const half = a.angle ? a.angle.length / m : 0; // r/2: the pairs that rotate
  return {
    // a rotary model's step: q before the rotation, q·k before it, the angle of each pair at the query's position
    qPre: a.q_pre ? row(a.q_pre, d) : null,
    logitsPre: a.logits_pre ? row(a.logits_pre, m) : null,
    qAngle: a.q_angle ? row(a.q_angle, half) : null,
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

export type QueryRow = ReturnType<typeof queryRow>;

/** Row j of a (rows, d) array. */
export function vectorRow(x: Float32Array, d: number, j: number): Float32Array {
  return x.subarray(j * d, (j + 1) * d);
}

/** q ⊙ k for every key row: the elementwise products whose sums are the logits. */
export function products(hd: HeadData, q: ArrayLike<number>): Float32Array[] {
  return Array.from({ length: hd.m }, (_, j) => {
    const kj = vectorRow(hd.arrays.k, hd.d, j);
    return Float32Array.from(kj, (kc, c) => q[c] * kc);
  });
}

/** The row of the strongest key the query may see (the first on a tie); -1 when every key is masked. */
export function strongestKey(r: Pick<QueryRow, "weights" | "allowed">): number {
  let best = -1;
  for (let j = 0; j < r.weights.length; j++)
    if (r.allowed[j] && (best < 0 || r.weights[j] > r.weights[best])) best = j;
  return best;
}

export interface Geometry {
  rh: number; // row height
  top: number; // y of the first key row
  cw: number; // strip cell width
  label: number; // label column width (panel 1)
  bar: number; // bar width (panels 3-5)
  num: number; // number column width
}

/** The width of the angle panel's strip: two strip cells per rotating pair, as wide as the `rotaryDim` it turns. */
export function angleWidth(g: Geometry, rotaryDim: number): number {
  return rotaryDim * g.cw + 8;
}

/** Panel widths (CSS px, canvases only) of geometry `g` for head size `d`, in the order of
 * `panels(bias, ..., rotaryDim)`: a rotary model's three panels first (the labels move to the first of them). */
export function panelWidths(g: Geometry, d: number, bias = false, rotaryDim = 0): number[] {
  const strip = d * g.cw + 8;
  const bars = g.bar + g.num + 8;
  const rest = bias ? [strip, bars, bars, bars + tagWidth(g), bars, strip] : [strip, bars, bars, bars, strip];
  if (rotaryDim > 0) return [g.label + strip, bars, angleWidth(g, rotaryDim), strip, ...rest];
  return [g.label + strip, ...rest];
}

/** The width of the bucket column ("b12") the "+ bias" panel adds after its numbers. */
export function tagWidth(g: Geometry): number {
  return Math.round(g.num * 0.55);
}

/** Each panel's border, padding and the gap after it (QK_CSS): what the row adds to the canvases' widths. */
export const PANEL_CHROME = 10 + 8;

/** The natural geometry for theme `t`, head size `d` and `m` key rows, the labels `labelWidth` wide at most. */
export function naturalGeometry(t: Theme, d: number, m: number, labelWidth: number): Geometry {
  const big = t.name === "lecture";
  const rh = m > 96 ? (big ? 18 : 12) : big ? 28 : 18;
  return {
    rh,
    top: Math.round(rh * 1.9),
    cw: Math.max(1, Math.min(6, Math.floor(96 / d))), // d = 32: 3 px; the whole view fits a notebook column
    label: labelWidth,
    bar: big ? 76 : 70,
    num: big ? 62 : 46,
  };
}

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
  rotaryDim = 0,
  minFont = 0,
): Geometry {
  // `minFont` (the lecture theme's 14 px): rows and number columns never get too small for it; the panels scroll
  // instead of shrinking the text past what a room can read.
  const rh = Math.max(6, minFont + 3, Math.min(g.rh, Math.floor((room.height - 4) / (m + 1.9))));
  // Strips keep their cell width while the labels, bars and numbers can give way (to 70 %); then strips narrow.
  const rope = rotaryDim > 0;
  const nPanels = (bias ? 7 : 6) + (rope ? 3 : 0);
  const nBars = (bias ? 4 : 3) + (rope ? 1 : 0);
  const stripCells = (rope ? 4 : 3) * d + rotaryDim; // strip cells across the row: q/k (twice with RoPE), q⊙k, v
  const free = room.width - PANEL_CHROME * nPanels - nPanels * 8 - (nBars - 3) * 8;
  const rest = g.label + nBars * (g.bar + g.num) + (bias ? tagWidth(g) : 0);
  let cw = g.cw;
  let s = 1;
  for (; cw >= 1; cw--) {
    s = Math.min(1, (free - stripCells * cw) / rest);
    if (s >= 0.7 || cw === 1) break;
  }
  s = Math.max(0.4, s, Math.min(1, Math.ceil(minFont * 3.1) / g.num));
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

/** The key row under y (CSS px from a canvas's top), or -1 above the first row or below the last. */
export function rowAtY(g: Geometry, m: number, y: number): number {
  const j = Math.floor((y - g.top) / g.rh);
  return y < g.top || j < 0 || j >= m ? -1 : j;
}

const ROPE_PANELS = [
  [
    "pre",
    "q, k before RoPE",
    "the query (top) and key vectors as the projections give them, before the rotary embedding turns them",
  ],
  ["dotpre", "q · k before RoPE", "q·k without position information: what the rotation changes"],
  [
    "angle",
    "angle per pair",
    "the angle each pair of dimensions turns at each position (position × the pair's frequency; a colour wheel, " +
      "query on top); pair p of a query at i and a key at j meet at angle(i) − angle(j)",
  ],
] as const;

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

const NUMBERS = "①②③④⑤⑥⑦⑧⑨⑩";

/**
 * The panels shown: the "+ bias" panel only for a model that adds a position bias, a rotary model's three panels
 * (q and k before the rotation, q·k before it, the angles) first when `rope`; titles numbered in order. The
 * scaling panel says "× 1/√d" when the model scales by 1/√d (`headDim`), else its factor ("× 1" for T5).
 */
export function panels(
  bias: boolean,
  scaling?: number,
  headDim?: number,
  rope = false,
): Array<{ id: string; title: string; help: string }> {
  const rootD =
    scaling !== undefined && headDim !== undefined && Math.abs(scaling - 1 / Math.sqrt(headDim)) < 1e-6;
  const shown = [...(rope ? ROPE_PANELS : []), ...PANELS.filter(([id]) => bias || id !== "bias")];
  return shown.map(([id, title, help], n) => ({
    id,
    title: `${NUMBERS[n]} ${id === "scaled" && scaling !== undefined && !rootD ? `× ${Number(scaling.toPrecision(3))}` : id === "qk" && rope ? "q, k after RoPE" : title}`,
    help: id === "qk" && rope ? "q and k turned by their positions' angles: what q·k is taken of" : help,
  }));
}

/** The panel that carries the key labels: the first one (q and k before the rotation for a rotary model). */
export function labelPanel(rope: boolean): string {
  return rope ? "pre" : "qk";
}

/** The tooltip's lines for key row j of panel `id`, the pointer `x` CSS px into the canvas (a strip's component). */
export function tipLines(
  meta: QKMeta,
  hd: HeadData,
  g: Geometry,
  query: number,
  id: string,
  j: number,
  x: number,
): string[] {
  const i = queryIndex(hd, query);
  const r = queryRow(hd, i);
  const p = keyPos(hd, j);
  const lines = [
    `key ${p} “${userText(meta.key_tokens[p] ?? "")}” ← query “${userText(meta.tokens[i] ?? "")}”`,
  ];
  const rope = Boolean(hd.arrays.angle);
  const off = id === labelPanel(rope) ? g.label : 4;
  const c = Math.floor((x - off) / g.cw);
  const d = hd.d;
  if (id === "pre" && r.qPre && c >= 0 && c < d) {
    const kc = hd.arrays.k_pre[j * d + c];
    lines.push(`before RoPE: q[${c}] = ${r.qPre[c].toFixed(4)}   k[${c}] = ${kc.toFixed(4)}`);
  }
  if (id === "angle" && r.qAngle && c >= 0) {
    const half = r.qAngle.length;
    const p = Math.floor(c / 2);
    if (p < half) {
      const ka = hd.arrays.angle[j * half + p];
      const deg = (x: number) => `${((x * 180) / Math.PI).toFixed(1)}°`;
      lines.push(
        `pair ${p}: the query turns ${deg(r.qAngle[p])}, this key ${deg(ka)}; they meet at ${deg(wrapAngle(r.qAngle[p] - ka))}`,
      );
    }
  }
  if ((id === "qk" || id === "prod" || id === "sum") && c >= 0 && c < d) {
    const kc = hd.arrays.k[j * d + c];
    const vc = hd.arrays.v[j * d + c];
    if (id === "sum") lines.push(`v[${c}] = ${vc.toFixed(4)}   output[${c}] = ${r.out[c].toFixed(4)}`);
    else
      lines.push(
        `q[${c}] = ${r.q[c].toFixed(4)}   k[${c}] = ${kc.toFixed(4)}   q⊙k = ${(r.q[c] * kc).toFixed(4)}`,
      );
  }
  if (!r.allowed[j]) lines.push("masked: this query may not attend to this key");
  else {
    if (r.logitsPre) lines.push(`q·k before RoPE = ${r.logitsPre[j].toFixed(4)}`);
    lines.push(`q·k${r.logitsPre ? " after RoPE" : ""} = ${r.logits[j].toFixed(4)}`);
    lines.push(`× ${meta.scaling.toPrecision(4)} = ${r.scaled[j].toFixed(4)}`);
    if (r.bias) {
      const b = r.bucket ? ` (bucket ${r.bucket[j]})` : "";
      lines.push(`+ bias ${r.bias[j].toFixed(4)}${b} = ${r.biased[j].toFixed(4)}`);
    }
    lines.push(`softmax = ${r.weights[j].toFixed(4)}`);
  }
  return lines;
}

/** The colour of an angle on a colour wheel (hue = angle; -π and π meet): the angle panel's cells. */
export function angleCss(theta: number): string {
  const hue = Math.round(((wrapAngle(theta) + Math.PI) / (2 * Math.PI)) * 360) % 360;
  return `hsl(${hue}, 62%, 52%)`;
}

/** An angle in radians brought into (-π, π]. */
export function wrapAngle(x: number): number {
  const t = x - 2 * Math.PI * Math.floor((x + Math.PI) / (2 * Math.PI));
  return t <= -Math.PI ? t + 2 * Math.PI : t;
}

/** The view's title: the model, the attention stack, the layer and head. */
export function titleText(meta: QKMeta, v: QKView): string {
  return `${userText(meta.title)} · ${meta.stack} attention · layer ${v.layer} · head ${v.head}`;
}

/** The caption under the controls: query, key/value head, d, scaling, bias, strongest key, the window's share. */
export function captionText(
  meta: QKMeta,
  v: QKView,
  hd: HeadData,
  i: number,
  r: QueryRow,
  best: number,
  selection: number[] = [],
): string {
  const d = hd.d;
  const keys = meta.key_tokens;
  const kv =
    meta.n_kv_heads < meta.n_heads
      ? ` (key/value head ${Math.floor(v.head / (meta.n_heads / meta.n_kv_heads))})`
      : "";
  const rootD = Math.abs(meta.scaling - 1 / Math.sqrt(d)) < 1e-6 ? ` = 1/√${d}` : "";
  const bias = r.bias ? ` · + position bias${r.bucket ? " (bN: T5 relative-position bucket)" : ""}` : "";
  const rotary = meta.rotary_dim ? ` · RoPE on ${meta.rotary_dim} of ${d} dimensions` : "";
  const strongest = best >= 0 ? isolate(tokenLabel(keys[keyPos(hd, best)] ?? "", 24)) : "none";
  const window = hd.pos
    ? ` · keys ${v.window[0]}–${v.window[1] - 1} of ${keys.length}, outside them ${(100 * hd.outside).toFixed(1)} % of the weight`
    : "";
  // several selected tokens: the panels step through one of them (span.oneQuery)
  const picked =
    selection.length > 1
      ? ` (one of ${selection.length} selected: ${spanTokens(
          meta.tokens.map((t) => isolate(tokenLabel(t, 24))),
          selection,
        )})`
      : "";
  return (
    `query ${i} “${isolate(tokenLabel(meta.tokens[i] ?? "", 24))}”${picked}${kv} · d = ${d} · scaling ${meta.scaling.toPrecision(4)}` +
    `${rootD}${rotary}${bias} · strongest key: “${strongest}”${window}`
  );
}
