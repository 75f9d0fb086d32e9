// HeadView's state: pure functions from the traits and a layer's line payload to what the canvas draws (no DOM).
// What Python sends is typed by js/src/generated/wire.ts (attnwidgets/viewdata/views/head_view.py); a window's
// payload says which token each row and column is (attnwidgets/viewdata/lines.py: window_payload).

import { hexToRgb } from "../../draw/colors";
import type { LineLabels } from "../../generated/wire";
import { userText } from "../../shared/text";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** Python traits of HeadView (attnwidgets/widgets/head_view.py). */
export interface HeadViewTraits {
  layer: number;
  head: number; // -1: every head (Python keeps it in step with `heads`)
  heads: number[];
  kind: string; // "self" | "encoder" | "decoder" | "cross"
  words: boolean;
  sentence_filter: string; // "all" | "AA" | "AB" | "BA" | "BB"
  selected: number[]; // query positions
  window: number[]; // [start, stop]: the query positions drawn (keys too, for self-attention)
  min_weight: number;
  theme: string;
  _meta: HeadViewMeta;
  // labels: word-level labels, when the first view is word level (else they come by "labels" request)
  _payload: PayloadOf<"head_view"> | Record<string, never>;
  _error: string;
}

/** HeadView's `_meta` (generated from attnwidgets/viewdata/views/head_view.py): `long` is true when the input is
 * shown in windows only (more than 512 tokens, or a lazy result); `n_kv_heads` 0 or = heads: no GQA. */
export type HeadViewMeta = MetaOf<"head_view">;

/** What picks the layer on screen: kind, layer, level and window. */
export type HeadViewPick = Pick<HeadViewTraits, "kind" | "layer" | "words" | "window">;

/** Labels of every kind at one level (token or word): what a "labels" request answers (generated). */
export type LevelLabels = LineLabels;

/** The labels of one kind: the tokens and sentence segments of the query (left) and key (right) columns. */
export interface Columns {
  tokens: [string[], string[]];
  segments: [number[], number[]];
}

export const FILTERS: Array<[string, string]> = [
  ["all", "All"],
  ["AA", "A → A"],
  ["AB", "A → B"],
  ["BA", "B → A"],
  ["BB", "B → B"],
];

/** Does the sentence filter keep a line from a query in segment qs to a key in segment ks? */
export function keeps(filter: string, qs: number, ks: number): boolean {
  if (filter === "all" || filter.length !== 2) return true;
  return qs === (filter[0] === "A" ? 0 : 1) && ks === (filter[1] === "A" ? 0 : 1);
}

/** Is query segment `qs` on the filter's query side (the left column drawn in full ink)? */
export function queryKept(filter: string, qs: number): boolean {
  return keeps(filter, qs, filter === "all" ? 0 : filter[1] === "A" ? 0 : 1);
}

/** Is key segment `ks` on the filter's key side? */
export function keyKept(filter: string, ks: number): boolean {
  return keeps(filter, filter === "all" ? 0 : filter[0] === "A" ? 0 : 1, ks);
}

/** Which tokens a windowed payload's rows and columns are (attnwidgets/viewdata/lines.py: window_payload). */
export interface WindowInfo {
  q: [number, number]; // query positions start..stop-1 (the rows)
  k: [number, number]; // key positions start..stop-1 (the first columns)
  far: number[]; // then these key positions outside the window (the strongest from the window's queries)
  n: [number, number]; // queries, keys in the whole input
}

/** The window `[start, stop]` moved by its width (step 1: next, -1: previous), kept inside 0..n. */
export function stepWindow(window: number[], n: number, step: number): [number, number] {
  const [s, e] = window;
  const size = Math.max(1, e - s);
  const start = Math.max(0, Math.min(n - size, s + step * size));
  return [start, start + size];
}

/** The labels of a window: its query tokens, its key tokens, then the far keys (`#position token`). */
export function windowColumns(all: Columns, w: WindowInfo): Columns {
  const [qt, kt] = all.tokens;
  const [qs, ks] = all.segments;
  return {
    tokens: [
      qt.slice(w.q[0], w.q[1]),
      [...kt.slice(w.k[0], w.k[1]), ...w.far.map((p) => `#${p} ${kt[p] ?? ""}`)],
    ],
    segments: [qs.slice(w.q[0], w.q[1]), [...ks.slice(w.k[0], w.k[1]), ...w.far.map((p) => ks[p] ?? 0)]],
  };
}

/** Many tokens and nothing in focus: raise the drawing threshold so the picture stays readable and fast. */
export function lineThreshold(n: number, minWeight: number, focused: boolean): number {
  return !focused && n > 128 ? Math.max(minWeight, 0.1) : minWeight;
}

/** Heads after an arrow key: the next (step 1) or previous (-1) head shown alone, wrapping around. */
export function stepHead(heads: number[], nHeads: number, step: number): number[] {
  if (nHeads <= 0) return heads;
  if (heads.length !== 1) return [step > 0 ? 0 : nHeads - 1];
  return [(((heads[0] + step) % nHeads) + nHeads) % nHeads];
}

/** The heads after a click on swatch i: i toggled, in order. */
export function toggleHead(heads: number[], i: number): number[] {
  const cur = new Set(heads);
  if (cur.has(i)) cur.delete(i);
  else cur.add(i);
  return [...cur].sort((a, b) => a - b);
}

/** The heads after a double-click on swatch i: i alone, or every head when i was already alone. */
export function soloHead(heads: number[], i: number, nHeads: number): number[] {
  const alone = heads.length === 1 && heads[0] === i;
  return alone ? Array.from({ length: nHeads }, (_, j) => j) : [i];
}

/** Black or white text on a swatch of colour (r, g, b): readable on yellow and on black. */
export function swatchInk([r, g, b]: number[]): string {
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#000" : "#fff";
}

/** A head swatch's style: shown, its colour with black or white digits; hidden, a pale wash of its colour under
 * a dashed border with the digit in the view's own text colour, at full opacity (a swatch faded to 25 % opacity
 * took its digit with it, unreadable on a projector). */
export function swatchStyle(colour: string, shown: boolean): string {
  const look = shown
    ? `background:${colour};color:${swatchInk(hexToRgb(colour))};border:2px solid #0000`
    : `background:color-mix(in srgb, ${colour} 22%, var(--aw-bg, #fff));color:var(--aw-fg, #000);` +
      "border:2px dashed var(--aw-muted, #777)";
  return `${look};min-width:2.2em;border-radius:4px;cursor:pointer`;
}

/** The number of query tokens of `kind` in the whole input (token level). */
export function queryCount(meta: HeadViewMeta, kind: string): number {
  return meta.tokens[kind]?.[0].length ?? 0;
}

/** Is the current window drawn as a window (a long input, or narrower than the input)? Words never are. */
export function isWindowed(meta: HeadViewMeta, v: HeadViewPick): boolean {
  if (v.words) return false;
  const w = v.window ?? [];
  const nq = queryCount(meta, v.kind);
  return w.length === 2 && (Boolean(meta.long) || w[0] !== 0 || w[1] !== nq);
}

/** The same key as HeadView._view_key in Python, so the first payload is recognised. */
export function viewKey(meta: HeadViewMeta, v: HeadViewPick): string {
  const base = `${v.kind}/${v.layer}/${v.words ? "w" : "t"}`;
  return isWindowed(meta, v) ? `${base}/${v.window[0]}-${v.window[1]}` : base;
}

/** The request for the layer on screen (a window adds its range). */
export function layerRequest(meta: HeadViewMeta, v: HeadViewPick): Record<string, unknown> {
  return {
    what: "layer",
    kind: v.kind,
    layer: v.layer,
    words: v.words,
    ...(isWindowed(meta, v) ? { window: [v.window[0], v.window[1]] } : {}),
  };
}

/** Does a payload with this floor hold every line the page may draw (all weights >= min_weight)? */
export function complete(floor: number | undefined, minWeight: number): boolean {
  return (floor ?? 0) <= minWeight + 1e-12;
}

/** The columns of kind `k` from labels of every kind (empty when there are none yet). */
export function columnsOf(all: LevelLabels | null, k: string): Columns {
  return { tokens: all?.tokens[k] ?? [[], []], segments: all?.segments[k] ?? [[], []] };
}

/** The rows of the selected query positions in a window starting at q0 with nq rows. */
export function selectedRows(selected: number[], q0: number, nq: number): number[] {
  return selected.map((p) => p - q0).filter((i) => i >= 0 && i < nq);
}

/** A token under the pointer: a query on the left or a key on the right. */
export type Hit = { side: "q" | "k"; i: number };

/** The queries whose lines are drawn: the hovered one, else the selected rows, else all `dq`. */
export function queriesDrawn(hover: Hit | null, selRows: number[], dq: number): number[] {
  if (hover?.side === "q") return [hover.i];
  if (selRows.length) return selRows.filter((i) => i < dq);
  return Array.from({ length: dq }, (_, i) => i);
}

/** The rows of the canvas: key columns before the far keys (`nWin`), the gap row before them, the row count. */
export function rowPlan(
  nq: number,
  nk: number,
  win: WindowInfo | null,
): { nWin: number; gap: number; n: number } {
  const nWin = win ? win.k[1] - win.k[0] : nk;
  const gap = win?.far.length ? 1 : 0; // an empty row between the window's keys and the far ones
  return { nWin, gap, n: Math.max(nq, nk + gap, 1) };
}

export interface Geo {
  top: number;
  rowH: number;
  xl: number; // right edge of the query labels
  xr: number; // left edge of the key labels
  width: number;
  height: number;
  posW: number; // the position (window) or segment (sentence pair) column on each side; 0 for none
  wr: number; // the key labels' width
  pair: boolean; // a sentence pair without a window: segment marks beside the columns
}

/**
 * Where everything goes: `n` rows, query and key labels `wl` and `wr` wide, a window's positions or a pair's segment
 * marks beside them; fitted to `room` (every row on screen, the gap between the columns narrower) when given.
 */
export function layout(
  t: { font: number; name: string },
  n: number,
  wl: number,
  wr: number,
  marks: { win: WindowInfo | null; pair: boolean },
  room: { width: number; height: number } | null,
): Geo {
  let rowH = Math.max(4, Math.min(t.font + 6, Math.floor(30000 / 2 / n)));
  if (room) rowH = Math.max(3, Math.min(rowH, Math.floor((room.height - 16) / n)));
  const { win, pair } = marks;
  const posW = win
    ? Math.ceil(String(win.n[0]).length * t.font * 0.62) + 8
    : pair
      ? Math.ceil(t.font * 0.9) + 12
      : 0;
  // Fitted: the gap between the columns gives way so the canvas is no wider than the box.
  const natural = t.name === "lecture" ? 320 : 240;
  const gapW = room ? Math.max(120, Math.min(natural, room.width - (2 * posW + wl + wr + 12))) : natural;
  return {
    top: 8,
    rowH,
    xl: posW + wl + 4,
    xr: posW + wl + 4 + gapW,
    width: posW + wl + gapW + wr + posW + 12,
    height: 16 + n * rowH,
    posW,
    wr,
    pair: !win && pair,
  };
}

/** The y of query row i; of key column j (the far keys below the gap row). */
export function rowY(g: Pick<Geo, "top" | "rowH">, i: number): number {
  return g.top + (i + 0.5) * g.rowH;
}

export function keyY(g: Pick<Geo, "top" | "rowH">, j: number, nWin: number, gap: number): number {
  return rowY(g, j < nWin ? j : j + gap);
}

/** The token at (x, y) CSS px on the canvas: a query left of the lines, a key right of them (not the gap row). */
export function tokenAt(
  g: Pick<Geo, "top" | "rowH" | "xl" | "xr">,
  nq: number,
  nk: number,
  win: WindowInfo | null,
  x: number,
  y: number,
): Hit | null {
  const i = Math.floor((y - g.top) / g.rowH);
  if (x <= g.xl + 4 && i >= 0 && i < nq) return { side: "q", i };
  const nWin = win ? win.k[1] - win.k[0] : nk;
  const j = win?.far.length && i >= nWin ? i - 1 : i; // the gap row before the far keys
  if (x >= g.xr - 4 && i >= 0 && j < nk && !(win?.far.length && i === nWin)) return { side: "k", i: j };
  return null;
}

/** Runs of equal segments: [first row, last row, segment]. */
export function segmentRuns(seg: number[]): Array<[number, number, number]> {
  const runs: Array<[number, number, number]> = [];
  for (let i = 0; i < seg.length; i++) {
    if (i > 0 && seg[i] === seg[i - 1]) continue;
    let end = i;
    while (end + 1 < seg.length && seg[end + 1] === seg[i]) end++;
    runs.push([i, end, seg[i]]);
  }
  return runs;
}

/** The traits a key press changes (↑ ↓ layer, ← → one head, Esc clears the selection, Page Up/Down a window);
 * null for any other key. */
export function keyChange(
  traits: Pick<HeadViewTraits, "layer" | "heads" | "window" | "kind">,
  meta: HeadViewMeta,
  windowed: boolean,
  key: string,
): Partial<HeadViewTraits> | null {
  const [nLayers, nHeads] = meta.shapes[traits.kind] ?? [0, 0];
  const layer = traits.layer;
  if (key === "ArrowDown") return { layer: Math.min(nLayers - 1, layer + 1) };
  if (key === "ArrowUp") return { layer: Math.max(0, layer - 1) };
  if (key === "ArrowRight") return { heads: stepHead(traits.heads, nHeads, 1) };
  if (key === "ArrowLeft") return { heads: stepHead(traits.heads, nHeads, -1) };
  if (key === "Escape") return { selected: [] };
  if ((key === "PageDown" || key === "PageUp") && windowed)
    return { window: stepWindow(traits.window, queryCount(meta, traits.kind), key === "PageDown" ? 1 : -1) };
  return null;
}

/** The view's title: model, attention kind, layer, level and window. */
export function titleText(meta: HeadViewMeta, v: HeadViewPick, win: WindowInfo | null): string {
  const which = v.kind === "cross" ? "target (left) → source (right)" : `${v.kind} attention`;
  const where = win ? ` · tokens ${win.q[0]}–${win.q[1] - 1} of ${win.n[0]}` : "";
  return `${userText(meta.title)} · ${which} · layer ${v.layer}${v.words ? " · words" : ""}${where}`;
}
