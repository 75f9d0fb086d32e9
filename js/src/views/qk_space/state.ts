// QKSpaceView's state, without the DOM: the traits, the point table Python packs (attnwidgets/viewdata/qk_space.py:
// COLUMNS), a grid of buckets for hit-testing 10k+ points, the colour of each point, the sizes, a token shown in its
// sentence and the tooltip. Pure functions, unit-tested (js/test/qk_space.test.ts). Mirrors attnwidgets/widgets/qk_space.py.

import { type ColorMapName, categorical, lut, lutIndex } from "../../draw/colors";
import { fmt } from "../../draw/heads";
import { type Mods, type SpanPick, nextSpan } from "../../draw/span";
import type { Packed } from "../../shared/buffers";
import { tokenLabel } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of QKSpaceView (attnwidgets/widgets/qk_space.py). */
export interface QKSpaceTraits {
  color: ColorBy;
  colormap: string;
  sentence: number; // -1: none clicked yet
  point: number; // -1: none
  selection: number[]; // selected query tokens of the sentence shown (positions in its tokens, sorted)
  theme: string;
  fit: "auto" | boolean | number[];
  _error: string;
  _payload: PayloadOf<"qk_space">; // points: (N, 9) float32, columns as COL
  _meta: QKSpaceMeta;
}

export type QKSpaceMeta = MetaOf<"qk_space">;

/** Columns of one point, in the order Python packs them (nine float32 numbers per point). */
export const COL = {
  x: 0,
  y: 1,
  kind: 2, // 0 query, 1 key
  sentence: 3,
  token: 4,
  position: 5, // relative position in the sentence, 0..1
  received: 6, // attention a key receives (NaN for queries)
  tokenCat: 7, // index among the most frequent tokens, -1 other
  posCat: 8, // index among the parts of speech, -1 other
} as const;
export const N_COLS = 9;

export type ColorBy = "position" | "token" | "pos" | "attention";

export function column(points: Float32Array, i: number, col: number): number {
  return points[i * N_COLS + col];
}

/** Flat x, y pairs of the points (what the scatter layout fits). */
export function coordinates(points: Float32Array): Float32Array {
  const n = Math.floor(points.length / N_COLS);
  const xy = new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    xy[2 * i] = points[i * N_COLS + COL.x];
    xy[2 * i + 1] = points[i * N_COLS + COL.y];
  }
  return xy;
}

// -- selecting tokens by their points -------------------------------------------------------------------------

/** The rows of the query points of the `selection`'s tokens of `sentence`, in token order (what the scatter rings;
 * attnwidgets/viewdata/qk_space.py selected_points). */
export function selectedPoints(points: Float32Array, sentence: number, selection: number[]): number[] {
  if (sentence < 0 || !selection.length) return [];
  const n = Math.floor(points.length / N_COLS);
  const want = new Set(selection);
  const out: number[] = [];
  for (let i = 0; i < n; i++)
    if (
      column(points, i, COL.kind) === 0 &&
      column(points, i, COL.sentence) === sentence &&
      want.has(column(points, i, COL.token))
    )
      out.push(i);
  return out.sort((a, b) => column(points, a, COL.token) - column(points, b, COL.token));
}

/** What a click on point `i` sets: its sentence and the point, and the selection: a query point's token with the
 * selection's click rules (nextSpan) within the sentence shown, alone in another sentence; a key point keeps the
 * selection of its sentence (none in another). */
export function pointPick(
  points: Float32Array,
  i: number,
  now: { sentence: number; selection: number[] },
  mods: Mods,
  anchor: number | null,
): SpanPick & { sentence: number; point: number } {
  const sentence = column(points, i, COL.sentence);
  const token = column(points, i, COL.token);
  const same = sentence === now.sentence;
  if (column(points, i, COL.kind) === 1)
    return { sentence, point: i, selection: same ? now.selection : [], anchor: same ? anchor : null };
  if (!same) return { sentence, point: i, selection: [token], anchor: token };
  return { sentence, point: i, ...nextSpan(now.selection, token, mods, anchor) };
}

// -- hit-testing --------------------------------------------------------------------------------------------

/** Points bucketed by a square grid of `cell` pixels: bucket b holds items[start[b] .. start[b + 1]). */
export interface PointGrid {
  cell: number;
  cols: number;
  rows: number;
  start: Int32Array;
  items: Int32Array;
}

/** Bucket pixel positions `px` (flat x, y pairs) in a width x height box (points outside go to the edge buckets). */
export function buildGrid(px: ArrayLike<number>, width: number, height: number, cell: number): PointGrid {
  const n = Math.floor(px.length / 2);
  const c = Math.max(1, cell);
  const cols = Math.max(1, Math.ceil(width / c));
  const rows = Math.max(1, Math.ceil(height / c));
  const bucket = new Int32Array(n);
  const start = new Int32Array(cols * rows + 1);
  for (let i = 0; i < n; i++) {
    const gx = Math.min(cols - 1, Math.max(0, Math.floor(px[2 * i] / c)));
    const gy = Math.min(rows - 1, Math.max(0, Math.floor(px[2 * i + 1] / c)));
    bucket[i] = gy * cols + gx;
    start[bucket[i] + 1]++;
  }
  for (let b = 0; b < cols * rows; b++) start[b + 1] += start[b];
  const fill = start.slice(0, cols * rows);
  const items = new Int32Array(n);
  for (let i = 0; i < n; i++) items[fill[bucket[i]]++] = i;
  return { cell: c, cols, rows, start, items };
}

/** The point nearest to (x, y) within `radius` pixels (ties: the later point, drawn on top), or -1. Looks only in
 * the buckets the radius reaches. */
export function gridNearest(
  g: PointGrid,
  px: ArrayLike<number>,
  x: number,
  y: number,
  radius: number,
): number {
  const x0 = Math.max(0, Math.floor((x - radius) / g.cell));
  const x1 = Math.min(g.cols - 1, Math.floor((x + radius) / g.cell));
  const y0 = Math.max(0, Math.floor((y - radius) / g.cell));
  const y1 = Math.min(g.rows - 1, Math.floor((y + radius) / g.cell));
  let best = -1;
  let bestD = radius * radius;
  for (let gy = y0; gy <= y1; gy++)
    for (let gx = x0; gx <= x1; gx++) {
      const b = gy * g.cols + gx;
      for (let j = g.start[b]; j < g.start[b + 1]; j++) {
        const i = g.items[j];
        const d = (px[2 * i] - x) ** 2 + (px[2 * i + 1] - y) ** 2;
        if (d < bestD || (d === bestD && i > best)) {
          bestD = d;
          best = i;
        }
      }
    }
  return best;
}

// -- colours ------------------------------------------------------------------------------------------------

export const OTHER = "#b4b4b4";
export const CONTINUOUS_BINS = 64;

/** Each point's colour as an index into `palette` (points of one colour are drawn as one path). Continuous
 * colourings (position 0..1, attention 0..vmax) use {@link CONTINUOUS_BINS} steps of the map, the last entry grey
 * (no value: a query under "attention"); categorical ones one colour per category, the last grey ("other"). */
export function pointColors(
  points: Float32Array,
  by: ColorBy,
  map: ColorMapName,
  nCategories: number,
): { index: Uint16Array; palette: string[]; vmax: number } {
  const n = Math.floor(points.length / N_COLS);
  const index = new Uint16Array(n);
  if (by === "token" || by === "pos") {
    const col = by === "token" ? COL.tokenCat : COL.posCat;
    const palette = [...Array.from({ length: nCategories }, (_, k) => categorical(k)), OTHER];
    for (let i = 0; i < n; i++) {
      const c = points[i * N_COLS + col];
      index[i] = c >= 0 && c < nCategories ? c : nCategories;
    }
    return { index, palette, vmax: 1 };
  }
  const col = by === "position" ? COL.position : COL.received;
  let vmax = 0;
  for (let i = 0; i < n; i++) {
    const v = points[i * N_COLS + col];
    if (Number.isFinite(v) && v > vmax) vmax = v;
  }
  if (by === "position" || !(vmax > 0)) vmax = 1;
  const table = lut(map);
  const palette: string[] = [];
  for (let b = 0; b < CONTINUOUS_BINS; b++) {
    const j = Math.round((b / (CONTINUOUS_BINS - 1)) * 255) * 3;
    palette.push(`rgb(${table[j]},${table[j + 1]},${table[j + 2]})`);
  }
  palette.push(OTHER);
  for (let i = 0; i < n; i++) {
    const v = points[i * N_COLS + col];
    index[i] = Number.isFinite(v)
      ? Math.round((lutIndex(v, vmax) / 255) * (CONTINUOUS_BINS - 1))
      : CONTINUOUS_BINS;
  }
  return { index, palette, vmax };
}

// -- text ---------------------------------------------------------------------------------------------------

/** The token `k` of `tokens` in its sentence, marked ⟦…⟧, with at most `context` tokens either side (… where cut). */
export function tokenInSentence(tokens: string[], k: number, context = 8): string {
  const lo = Math.max(0, k - context);
  const hi = Math.min(tokens.length, k + context + 1);
  const words = [];
  for (let j = lo; j < hi; j++) {
    const t = tokenLabel(tokens[j] ?? "", 24);
    words.push(j === k ? `⟦${t}⟧` : t);
  }
  return `${lo > 0 ? "… " : ""}${words.join(" ")}${hi < tokens.length ? " …" : ""}`;
}

/** The colour menu's options (part of speech only when the corpus has it). */
export function colorOptions(m: Pick<QKSpaceMeta, "has_pos">): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ["position", "position in sentence"],
    ["token", "token"],
  ];
  if (m.has_pos) out.push(["pos", "part of speech"]);
  out.push(["attention", "attention received (keys)"]);
  return out;
}

/** Sizes of the scatter and the panel (CSS px) for a theme's `maxGrid`, the output area's width `area` and, fitting,
 * the fitted `room`: the scatter about 55 % of the width, the panel what is left (at least 140 px). */
export function panelSizes(
  maxGrid: number,
  area: number,
  room: { width: number; height: number } | null,
): [number, number] {
  const avail = Math.min(area, room ? room.width : Number.POSITIVE_INFINITY) - 12;
  let s = Math.round(Math.min(maxGrid * 0.8, Math.max(240, avail * 0.55)));
  if (room) s = Math.max(160, Math.min(s, room.height - 4));
  const p = Math.max(140, Math.min(s, Math.floor(avail - s - 12)));
  return [s, room ? Math.min(p, room.height - 24) : p];
}

/** How many categories colouring `by` has (tokens or parts of speech; 0 for a continuous one). */
export function categoryCount(m: Pick<QKSpaceMeta, "token_names" | "pos_names">, by: ColorBy): number {
  return by === "token" ? m.token_names.length : by === "pos" ? m.pos_names.length : 0;
}

/** The tooltip of point i: query or key, the token in its sentence, and what the colouring shows of it. */
export function pointTip(
  m: Pick<QKSpaceMeta, "tokens" | "pos_names">,
  points: Float32Array,
  by: ColorBy,
  i: number,
): { text: string; data: Record<string, string> } {
  const s = column(points, i, COL.sentence);
  const k = column(points, i, COL.token);
  const kind = column(points, i, COL.kind) === 0 ? "query" : "key";
  const tokens = m.tokens[s] ?? [];
  const lines = [
    `${kind} “${tokenLabel(tokens[k] ?? "", 24)}” · sentence ${s}, token ${k}`,
    tokenInSentence(tokens, k),
  ];
  if (by === "attention" && kind === "key")
    lines.push(`attention received: ${fmt(column(points, i, COL.received))}`);
  if (by === "pos") {
    const c = column(points, i, COL.posCat);
    lines.push(`part of speech: ${c >= 0 ? m.pos_names[c] : "other"}`);
  }
  return {
    text: lines.join("\n"),
    data: { kind, sentence: String(s), token: String(k), text: tokens[k] ?? "" },
  };
}

/** The panel's title for sentence s on the head, with the clicked token (a query's row or a key's column). */
export function panelTitle(
  m: Pick<QKSpaceMeta, "layer" | "head">,
  s: number,
  token: { text: string; isKey: boolean } | null,
): string {
  const what = token ? ` · ${token.isKey ? "key" : "query"} “${tokenLabel(token.text, 20)}”` : "";
  return `sentence ${s} · layer ${m.layer} head ${m.head}${what}`;
}
