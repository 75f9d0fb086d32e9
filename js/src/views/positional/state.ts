// PositionalExplorer's state: pure functions from the traits and the panels Python sent to what the page shows
// (no DOM): which controls an encoding has, the panels' size, their pixels, the texts. Mirrors
// attnwidgets/widgets/positional.py.

import { type DivergingName, divergingRgb } from "../../draw/diverging";
import type { MetaOf, PayloadOf } from "../../shared/wire_model";

/** One panel as Python sends it (attnwidgets/viewdata/views/positional.py: PositionalPanel): the matrix (rows, cols)
 * float32, NaN where masked; axis names; the number of the first column (T5 offsets start below 0); what a cell
 * holds; the colour scale chosen in Python (attnwidgets/viewdata/scales.py: the shade each cell is drawn with, -1..1,
 * 0 white; the legend's end texts; what the scale is, in words); `extra` (e.g. T5 bucket) where it applies. */
export type PositionalPanel = PayloadOf<"positional">["panels"][number];

/** Python traits of PositionalExplorer (attnwidgets/widgets/positional.py). */
export interface PositionalTraits {
  encoding: string; // "sinusoidal" | "learned" | "rope" | "alibi" | "t5"
  length: number;
  d_model: number;
  n_heads: number;
  head: number;
  causal: boolean;
  similarity: string; // "cosine" | "dot"
  colormap: string; // "" = the theme's diverging scale; "rdbu" | "puor"
  theme: string;
  _payload: PayloadOf<"positional"> | Record<string, never>;
  _meta: PositionalMeta;
  _error: string;
}

/** PositionalExplorer's `_meta` (attnwidgets/viewdata/views/positional.py). */
export type PositionalMeta = MetaOf<"positional">;

/** The traits the page's controls set. */
export type Editable = Pick<
  PositionalTraits,
  "encoding" | "length" | "d_model" | "n_heads" | "head" | "causal" | "similarity"
>;

export const ENCODINGS: Array<[string, string]> = [
  ["sinusoidal", "sinusoidal (Vaswani)"],
  ["learned", "learned (BERT)"],
  ["rope", "RoPE (rotary)"],
  ["alibi", "ALiBi (linear bias)"],
  ["t5", "T5 relative buckets"],
];

/** Which controls encoding `enc` has besides the menu and the length: the width slider (and its name), the
 * similarity menu, the heads and head sliders with the causal box. A learned table of a model has a fixed width. */
export function controlsFor(
  enc: string,
  hasTable: boolean,
): { width: string | null; similarity: boolean; heads: boolean } {
  const fixedWidth = enc === "learned" && hasTable;
  const width = enc === "sinusoidal" || enc === "rope" || (enc === "learned" && !fixedWidth);
  return {
    width: width ? (enc === "rope" ? "head width d" : "d_model") : null,
    similarity: enc === "sinusoidal" || enc === "learned",
    heads: enc === "alibi" || enc === "t5",
  };
}

/** A new head count `v`: the head shown stays below it. */
export function headsChange(v: number, head: number): Partial<Editable> {
  return { n_heads: v, head: Math.min(head, v - 1) };
}

/** The panels' left margin (CSS px), for the row numbers and the axis name. */
export function panelLeft(big: boolean): number {
  return big ? 70 : 52;
}

/** Fitted: the largest panel side (CSS px) that puts both panels side by side inside `room` with their titles,
 * legends and notes (`chrome` px tall), at least 60 px and at most the theme's natural side. */
export function fittedSide(
  big: boolean,
  room: { width: number; height: number },
  chrome: number,
  gap: number,
): number {
  const across = (room.width - gap) / 2 - panelLeft(big) - 12;
  const down = room.height - chrome - 8 - (big ? 56 : 42);
  return Math.max(60, Math.min(big ? 440 : 340, across, down));
}

/** A panel note's widest (CSS px): fitted, at least 360 px (narrower, it wraps to more lines, the panels shrink to
 * make room, and the note narrows again: ALiBi's maps ended at 100 px beside a one-word-a-line note). */
export function noteWidth(side: number | null): number {
  return side ? Math.max(side + 70, 360) : 420;
}

/** RGBA pixels of a rows x cols matrix on a diverging scale [-vmax, vmax]; NaN (masked) cells are light grey. */
export function divergingPixels(
  data: ArrayLike<number>,
  rows: number,
  cols: number,
  vmax: number,
  name: DivergingName,
): Uint8ClampedArray<ArrayBuffer> {
  const px = new Uint8ClampedArray(new ArrayBuffer(rows * cols * 4));
  for (let i = 0; i < rows * cols; i++) {
    const v = data[i];
    const o = i * 4;
    const [r, g, b] = Number.isNaN(v) ? [220, 220, 220] : divergingRgb(name, v, vmax);
    px[o] = r;
    px[o + 1] = g;
    px[o + 2] = b;
    px[o + 3] = 255;
  }
  return px;
}

/** The legend's end texts: Python's when sent, else ∓vmax. */
export function legendEnds(panel: Pick<PositionalPanel, "legend">, vmax: number): [string, string] {
  return panel.legend ? [panel.legend[0], panel.legend[1]] : [(-vmax).toPrecision(3), vmax.toPrecision(3)];
}

/** The view's title: the encoding (a learned table's name), the length. */
export function positionalTitle(enc: string, tableName: string, length: number): string {
  const label = ENCODINGS.find(([k]) => k === enc)?.[1] ?? enc;
  const which = enc === "learned" ? ` · ${tableName}` : "";
  return `Positional encodings · ${label}${which} · ${length} positions`;
}

/** The tooltip of cell (row, col) of a panel: its row and column, its value ("masked" for NaN), its extra. */
export function cellTip(
  panel: Pick<PositionalPanel, "rows" | "cols" | "col_start" | "value" | "extra_name">,
  v: number,
  extra: number | null,
  row: number,
  col: number,
): string {
  const more = extra === null ? "" : `\n${panel.extra_name ?? "extra"} ${extra}`;
  const shown = Number.isNaN(v) ? "masked" : v.toFixed(4);
  return `${panel.rows} ${row}, ${panel.cols} ${col + panel.col_start}\n${panel.value} ${shown}${more}`;
}
