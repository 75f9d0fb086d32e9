// FillMask's state: pure functions from the traits and the payload to what the page draws (no DOM): the attention
// row of one [MASK], the bar panels' layout, which panel a click is on, the texts. Mirrors attnwidgets/widgets/fill_mask.py.

import { spanTokens } from "../../draw/span";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** One [MASK]'s top-k fillers (MaskFill of attnwidgets/viewdata/views/fill_mask.py). */
export type Fill = PayloadOf<"fill_mask">["fills"][number];

/** Python traits of FillMask (attnwidgets/widgets/fill_mask.py). */
export interface FillMaskTraits {
  text: string;
  k: number;
  layer: number;
  head: number;
  mask: number;
  selection: number[]; // the query rows the panel combines (default: the [MASK]'s position; []: the [MASK]'s row)
  combine: string; // "mean" | "sum"
  lens: boolean; // the logit lens panel: each layer's top fillers of the [MASK], the layer's row outlined
  theme: string;
  _error: string;
  _meta: MetaOf<"fill_mask">; // shape: (masks, layers, heads, tokens)
  _payload: PayloadOf<"fill_mask">;
}

/** The attention of mask `m` at `layer` over the tokens; head -1 is the mean over the layer's heads. */
export function attentionRow(
  rows: Float32Array,
  shape: number[],
  m: number,
  layer: number,
  head: number,
): Float32Array {
  const [, nLayers, nHeads, n] = shape;
  const out = new Float32Array(n);
  const base = (m * nLayers + layer) * nHeads * n;
  const heads = head < 0 ? Array.from({ length: nHeads }, (_, i) => i) : [head];
  for (const hh of heads) for (let j = 0; j < n; j++) out[j] += rows[base + hh * n + j] / heads.length;
  return out;
}

/** The `combine` ("mean" or "sum") of the selected query rows at `layer` of `attention` ((layers, heads, n, n));
 * head -1 is the mean over the layer's heads (attnwidgets/viewdata/views/fill_mask.py fill_mask_row). */
export function selectionRow(
  attention: Float32Array,
  shape: number[],
  layer: number,
  head: number,
  selection: number[],
  combine: string,
): Float32Array {
  const [, nHeads, , n] = shape;
  const out = new Float32Array(n);
  const heads = head < 0 ? Array.from({ length: nHeads }, (_, i) => i) : [head];
  // positions past this sentence's tokens (a selection made for the next sentence, here before its rows) are skipped
  const rows = selection.filter((q) => q < n);
  const scale = (combine === "sum" ? 1 : 1 / Math.max(1, rows.length)) / heads.length;
  for (const hh of heads)
    for (const q of rows) {
      const base = ((layer * nHeads + hh) * n + q) * n;
      for (let j = 0; j < n; j++) out[j] += attention[base + j] * scale;
    }
  return out;
}

/** The tokens the panel marks: the selection, or with nothing selected the [MASK]'s position. */
export function shownRows(selection: number[], positions: number[], m: number): number[] {
  return selection.length || positions[m] === undefined ? selection : [positions[m]];
}

/** The menus' options for a (masks, layers, heads, tokens) shape: [MASK] #1.. (only with several), layers, heads
 * with "mean" (-1) first. */
export function menuOptions(shape: number[]): {
  mask: Array<[string, string]> | null;
  layer: Array<[string, string]>;
  head: Array<[string, string]>;
} {
  const [nMasks, nLayers, nHeads] = shape;
  const count = (n: number) => Array.from({ length: n }, (_, i): [string, string] => [String(i), String(i)]);
  return {
    mask:
      nMasks > 1
        ? Array.from({ length: nMasks }, (_, i): [string, string] => [String(i), `#${i + 1}`])
        : null,
    layer: count(nLayers),
    head: [["-1", "mean"], ...count(nHeads)],
  };
}

/** The pictures' width (CSS px): the widget's (`measured`, else the output area's), within 240 and the theme's most. */
export function pictureWidth(measured: number, room: number, themeName: string): number {
  // never wider than the room less the root's padding: a title measured before the file browser opened kept the
  // picture as wide as before (828 px in an 820 px output, cut)
  const w = Math.min(measured || room, room - 16);
  return Math.max(240, Math.min(w - 8, themeName === "lecture" ? 1180 : 900));
}

/** Where the bar panels go: one per [MASK], `perRow` a row, each `w` x `h`; a bar `barMax` px at probability
 * `pMax`, which is always 1: every panel is drawn on one fixed 0–100 % axis, so an 8 % guess is a short bar, not a
 * full-length one (a scale set by the top filler made the likeliest guess look certain). */
export interface FillsLayout {
  perRow: number;
  w: number;
  h: number;
  nRows: number;
  lineH: number;
  labelW: number;
  barMax: number;
  pMax: number;
}

export function fillsLayout(fills: Fill[], room: number, font: number, valueW: number): FillsLayout {
  const k = Math.max(1, ...fills.map((f) => f.tokens.length));
  const lineH = Math.round(font * 1.6);
  const labelW = Math.round(font * 7);
  const perRow = Math.max(1, Math.min(fills.length, Math.floor(room / (labelW + valueW + font * 6))));
  const w = Math.floor(Math.min(room / perRow, labelW + valueW + font * 14));
  return {
    perRow,
    w,
    h: lineH * (k + 1) + 8,
    nRows: Math.ceil(fills.length / perRow),
    lineH,
    labelW,
    barMax: w - labelW - valueW - 16,
    pMax: 1,
  };
}

/** The [MASK] whose panel is at (x, y) px, or -1 outside the `n` panels. */
export function panelAt(l: Pick<FillsLayout, "w" | "h" | "perRow">, n: number, x: number, y: number): number {
  const col = Math.floor(x / l.w);
  const row = Math.floor(y / l.h);
  const m = row * l.perRow + col;
  return col >= 0 && col < l.perRow && m >= 0 && m < n ? m : -1;
}

/** How the attention row names its tokens: `lines` 1 (level, each label within its column), 2 (level, staggered over
 * two lines: each label may take two columns' width, its neighbours being on the other line), or 0 (turned 90°, every
 * `every`-th token named, `room` px down). `room`: the most px a label takes (along the row, or down when turned). */
export interface RowLabels {
  lines: number;
  every: number;
  room: number;
}

/** Room between two level labels (px). */
const LABEL_GAP = 4;

/** The line height of the level labels of a `font` px font (a text's box is about one font high). */
export function labelLine(font: number): number {
  return Math.round(font * 1.3);
}

/** The attention row's columns and how their labels go, from each label's measured width (`widths`, px, in the
 * font it is drawn in; the bold of a marked one). `x0` is where the first column starts: right of the value axis
 * and far enough in that a staggered label never reaches past the canvas's left edge (nor under the axis's "0").
 * Labels never overlap: level ones stay within their column (one line) or two columns (two lines, every other label
 * on the second); turned ones are one text line wide and `every` columns apart. */
export function rowColumns(
  n: number,
  room: number,
  font: number,
  widths: number[] = [],
): { x0: number; colW: number; labels: RowLabels } {
  const axis = Math.round(font * 3.2);
  const longest = Math.min(Math.max(0, ...widths), font * 6); // a longer token is cut to this with an ellipsis
  const columns = (extra: number) =>
    Math.max(8, Math.min(font * 4.5, Math.floor((room - axis) / Math.max(1, n + extra))));
  for (const lines of [1, 2]) {
    // two lines: a label is centred on its column but may be two columns wide, so half a column more each side
    const colW = columns(lines - 1);
    const labelRoom = Math.min(lines * colW - LABEL_GAP, font * 6);
    if (longest <= labelRoom) {
      const labels = { lines, every: 1, room: labelRoom };
      return { x0: axis + labelReach(labels, colW), colW, labels };
    }
  }
  const colW = columns(0);
  const every = Math.max(1, Math.ceil((font * 1.25) / colW));
  return { x0: axis, colW, labels: { lines: 0, every, room: Math.max(font, longest) } };
}

/** Which of `n` turned labels are named, `every` apart at least: the marked ones (as many as keep that distance),
 * then every `every`-th token not within `every` of a named marked one. */
export function namedColumns(n: number, every: number, marked: number[]): boolean[] {
  const named = new Array<boolean>(n).fill(false);
  const kept: number[] = [];
  for (const j of [...new Set(marked)].filter((j) => j >= 0 && j < n).sort((a, b) => a - b))
    if (!kept.length || j - kept[kept.length - 1] >= every) kept.push(j);
  for (const j of kept) named[j] = true;
  for (let j = 0; j < n; j += every) if (kept.every((k) => Math.abs(j - k) >= every)) named[j] = true;
  return named;
}

/** How far (px) a level label may reach past its column on either side (a staggered one: about half a column). */
export function labelReach(labels: RowLabels, colW: number): number {
  return labels.lines ? Math.max(0, Math.ceil((labels.room - colW) / 2)) : 0;
}

/** The height (px) under the row's axis its labels take (they start 8 px under it, clear of the axis's "0"). */
export function labelHeight(labels: RowLabels, font: number): number {
  return labels.lines ? labels.lines * labelLine(font) + 10 : labels.room + 12;
}

/** The token column under x px, or -1 outside the `n` tokens. */
export function columnAt(cols: { x0: number; colW: number }, n: number, x: number): number {
  const j = Math.floor((x - cols.x0) / (cols.colW || 1));
  return j >= 0 && j < n ? j : -1;
}

/** The title over the attention row: whose row it is (the [MASK]'s, or the selection's caption when other tokens
 * are selected: `tokens` for their text), the layer and the head. */
export function rowTitle(
  m: number,
  layer: number,
  head: number,
  picked: { tokens: string[]; positions: number[]; selection: number[]; combine: string } | null = null,
): string {
  const rows = picked ? shownRows(picked.selection, picked.positions, m) : [];
  const ownRow = !picked || (rows.length === 1 && rows[0] === picked.positions[m]);
  const which = head < 0 ? "mean of the heads" : `head ${head}`;
  if (ownRow) return `Where [MASK] #${m + 1} attends: layer ${layer}, ${which}`;
  const many = rows.length > 1 ? ` attend (${picked.combine} of ${rows.length} rows)` : " attends";
  return `Where ${spanTokens(picked.tokens, rows)}${many}: layer ${layer}, ${which}`;
}

/** The title: the model, and when the guesses come from a head attnwidgets trained (not the model's own), that. */
export function fillTitle(model: string, head: string): string {
  const ours = head.startsWith("Not the model's own head");
  return `${model} · fill in the [MASK]${ours ? " · attnwidgets' head" : ""}`;
}

/** The caption: what the bars are, how to pick a [MASK] (with several), how to type (how to select query rows is
 * the attention row's tooltip: the caption has no room for it on a 1280 x 720 screen). (Whose guesses they are, the
 * `head` note from Python, is drawn beside the bars.) */
export function fillCaption(nFills: number): string {
  return (
    "Bars: each filler's probability on a 0–100 % axis (softmax over all pieces, top k). " +
    (nFills > 1 ? "Click a [MASK]'s bars to see where it attends. " : "") +
    "Type a sentence with [MASK], then Enter."
  );
}
