// AttentionCompare's state: pure functions from the traits and the payload to what the maps and the grid draw
// (no DOM). Mirrors attnwidgets/widgets/compare.py; the numbers are analysis/compare.py's compare_attention.

import { type DivergingName, divergingRgb } from "../../draw/diverging";
import { fmt, headLabel, statRange } from "../../draw/heads";
import type { Packed } from "../../shared/buffers";
import { userText } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of AttentionCompare (attnwidgets/widgets/compare.py). */
export interface CompareTraits {
  layer: number;
  head: number;
  kind: string;
  words: boolean;
  show: string; // "side" | "diff"
  summary: string; // "js" | "cosine"
  colormap: string;
  diverging: string;
  theme: string;
  fit: "auto" | boolean | number[]; // draw/fit.ts
  selection: number[]; // selected query rows of A (draw/span.ts), [] none
  combine: string; // "mean" | "sum"
  _error: string;
  _meta: CompareMeta;
  _payload: ComparePayload;
}

export type CompareMeta = MetaOf<"compare">;

export type ComparePayload = PayloadOf<"compare">;

export type Which = "a" | "b" | "diff";

/** One map on the canvas: where it sits, its cell, its rows and columns, which matrix it draws. */
export interface Panel {
  x0: number;
  y0: number;
  cell: number;
  nq: number;
  nk: number;
  which: Which;
}

/** One map's labels: query and key tokens, whether each has a partner on the other side (null: all aligned). */
export interface Side {
  q: string[];
  k: string[];
  qOk: boolean[] | null;
  kOk: boolean[] | null;
  which: Which;
  name: string;
}

/** Colour of a token label that has no partner on the other side. */
export const UNALIGNED = "#a8a8a8";

/** RGBA pixels of a signed matrix on a symmetric diverging scale [-dmax, dmax]; NaN light grey. */
export function divergingPixels(
  data: Float32Array,
  rows: number,
  cols: number,
  dmax: number,
  name: DivergingName,
): Uint8ClampedArray<ArrayBuffer> {
  const px = new Uint8ClampedArray(new ArrayBuffer(rows * cols * 4));
  for (let i = 0; i < rows * cols; i++) {
    const v = data[i];
    const rgb: [number, number, number] = Number.isNaN(v) ? [235, 235, 235] : divergingRgb(name, v, dmax);
    px.set([rgb[0], rgb[1], rgb[2], 255], i * 4);
  }
  return px;
}

/** The largest |v| of the finite values (0 when none): the half-width of a diverging row's scale. */
export function absTop(row: ArrayLike<number>): number {
  let top = 0;
  for (let i = 0; i < row.length; i++) {
    const v = row[i];
    if (Number.isFinite(v) && Math.abs(v) > top) top = Math.abs(v);
  }
  return top;
}

/** The maps of a show: B − A over the aligned tokens, or A | B with their unaligned tokens marked. The panels say
 * A and B alone when both results have one name (the title names it once). */
export function sides(m: CompareMeta, show: string): Side[] {
  const L = m.labels;
  if (show === "diff")
    return [{ q: L.aligned[0], k: L.aligned[1], qOk: null, kOk: null, which: "diff", name: "B − A" }];
  const same = m.a_name === m.b_name;
  return [
    {
      q: L.a[0],
      k: L.a[1],
      qOk: L.a_matched[0],
      kOk: L.a_matched[1],
      which: "a",
      name: same ? "A" : `A · ${m.a_name}`,
    },
    {
      q: L.b[0],
      k: L.b[1],
      qOk: L.b_matched[0],
      kOk: L.b_matched[1],
      which: "b",
      name: same ? "B" : `B · ${m.b_name}`,
    },
  ];
}

/** The rows of panel `which` that the selection (positions of A) names. */
export function selectedRows(
  selection: number[],
  queryMap: [number[], number[]] | undefined,
  which: Which,
): number[] {
  if (which === "a") return selection;
  const [qa, qb] = queryMap ?? [[], []];
  const picked = new Set(selection);
  const out: number[] = [];
  qa.forEach((a, i) => {
    if (picked.has(a)) out.push(which === "b" ? qb[i] : i);
  });
  return out.sort((x, y) => x - y);
}

/** The position of A that row `q` of panel `which` stands for (null: a B row with no partner in A). */
export function positionInA(
  queryMap: [number[], number[]] | undefined,
  which: Which,
  q: number,
): number | null {
  if (which === "a") return q;
  const [qa, qb] = queryMap ?? [[], []];
  if (which === "diff") return qa[q] ?? null;
  const i = qb.indexOf(q);
  return i < 0 ? null : qa[i];
}

/** The maps' cell and panels: label room `rooms` left of each, a heading and the tallest key labels above.
 * `avail` is the width the maps have, `fitted` a box (less `below`, what the legend takes) to fit in. */
export function panelLayout(o: {
  sides: Side[];
  rooms: number[];
  heading: number;
  avail: number;
  maxCell: number;
  maxSide: number;
  fitted: { width: number; height: number } | null;
  gridW: number;
  below: number;
}): { cell: number; top: number; rowsMax: number; panels: Panel[]; width: number } {
  const top = o.heading + Math.max(...o.rooms);
  const cols = o.sides.reduce((n, s) => n + s.k.length, 0);
  const rowsMax = Math.max(...o.sides.map((s) => s.q.length), 1);
  const labelsW = o.rooms.reduce((a, b) => a + b, 0) + 16 * o.sides.length;
  let cell = Math.max(
    3,
    Math.min(o.maxCell, Math.floor((o.avail - labelsW) / Math.max(1, cols)), Math.floor(o.maxSide / rowsMax)),
  );
  if (o.fitted) {
    const byH = Math.floor((o.fitted.height - o.below - top - 8) / rowsMax);
    const byW = Math.floor((o.fitted.width - o.gridW - 44 - labelsW) / Math.max(1, cols));
    cell = Math.max(3, Math.min(cell, byH, byW));
  }
  const panels: Panel[] = [];
  let x = 0;
  o.sides.forEach((s, i) => {
    x += o.rooms[i];
    panels.push({ x0: x, y0: top, cell, nq: s.q.length, nk: s.k.length, which: s.which });
    x += s.k.length * cell + 16;
  });
  return { cell, top, rowsMax, panels, width: Math.ceil(x) };
}

/** The name of the span rows the view wants: "layer/head/selection/combine" (Python's `span_key`). */
export function spanKey(v: Pick<CompareTraits, "layer" | "head" | "selection" | "combine">): string {
  return `${v.layer}/${v.head}/${(v.selection ?? []).join(",")}/${v.combine}`;
}

/** The map cell at (x, y) px on the maps' canvas, or null. */
export function mapCellAt(
  panels: Panel[],
  x: number,
  y: number,
): { panel: Panel; q: number; k: number } | null {
  for (const p of panels) {
    const k = Math.floor((x - p.x0) / p.cell);
    const q = Math.floor((y - p.y0) / p.cell);
    if (x >= p.x0 && y >= p.y0 && k < p.nk && q < p.nq) return { panel: p, q, k };
  }
  return null;
}

/** The tooltip of a map cell: "query → key" and the weight (or B − A). */
export function mapTip(L: CompareMeta["labels"], which: Which, q: number, k: number, v: number): string {
  const src = which === "diff" ? L.aligned : which === "a" ? L.a : L.b;
  const what = which === "diff" ? "B − A" : which.toUpperCase();
  return `${src[0][q]} → ${src[1][k]}\n${what}: ${fmt(v)}`;
}

/** The grid's per-head values of summary `name` (the summaries are stacked, one layers x heads block each). */
export function summarySlice(
  S: Float32Array,
  m: CompareMeta,
  name: string,
): { data: Float32Array; name: string } {
  const i = Math.max(0, m.summaries.indexOf(name));
  const n = m.shape[0] * m.shape[1];
  return { data: S.subarray(i * n, (i + 1) * n), name };
}

/** The grid's colour scale: JS divergence from 0 (larger = more different, the map as it is); cosine over its
 * range, reversed (smaller = more different), so the most changed heads are dark in both. `shade(v)` is the
 * value on a map from 0 to hi − lo; `ends` are the legend's left and right labels. */
export function gridScale(
  name: string,
  data: Float32Array,
): { lo: number; hi: number; shade: (v: number) => number; ends: [string, string] } {
  const [lo, hi] = name === "js" ? [0, Math.max(statRange(data)[1], 1e-9)] : statRange(data);
  const shade = (v: number) => (name === "js" ? v - lo : hi - v);
  const ends: [string, string] = name === "js" ? [fmt(lo, 2), fmt(hi, 2)] : [fmt(hi, 2), fmt(lo, 2)];
  return { lo, hi, shade, ends };
}

/** The grid cell's tooltip. */
export function gridTip(m: CompareMeta, name: string, layer: number, head: number, v: number): string {
  return `head ${headLabel(layer, head)}\n${m.summary_labels[name] ?? name}: ${fmt(v)}`;
}

/** The title: the two results and the head on screen. */
export function titleText(m: CompareMeta, layer: number, head: number): string {
  const names =
    m.a_name === m.b_name
      ? `${userText(m.a_name)}: A vs B`
      : `A: ${userText(m.a_name)} · B: ${userText(m.b_name)}`;
  return `${names} · head ${layer}/${head < 0 ? "mean" : head}`;
}

/** The caption: how the tokens were matched, and how many have no partner. */
export function captionText(m: CompareMeta): string {
  if (m.identity) return "A and B have the same tokens: every position compared.";
  const qa = m.labels.a_matched[0].filter((x) => !x).length;
  const qb = m.labels.b_matched[0].filter((x) => !x).length;
  return `Tokens matched by text (difflib); grey tokens have no partner (${qa} in A, ${qb} in B) and are left out of B − A.`;
}

/** The maps' legend: its ends and label, for the show. */
export function mapLegendText(
  show: string,
  vmax: number,
  dmax: number,
): { lo: string; hi: string; label: string } {
  if (show === "diff")
    return {
      lo: `−${fmt(dmax, 3)}`,
      hi: `+${fmt(dmax, 3)}`,
      label: dmax > 0 ? "B − A (white: 0, no change)" : "B − A is zero everywhere: A and B agree here",
    };
  return { lo: "0", hi: fmt(vmax, 3), label: "attention weight" };
}
