// RouterView's state: pure functions from the traits and the routing arrays to what the page draws (no DOM): the
// cells' colours, the load bars of a layer over the selection, the titles, the tooltip and the layout's hit tests.
// Mirrors attnwidgets/widgets/routers.py and attnwidgets/viewdata/views/routers.py (the same palette rule, title and
// load as RouterResult.load, which the browser test compares).

import { hexToRgb } from "../../draw/colors";
import { decode } from "../../shared/buffers";
import type { WireTraits } from "../../shared/wire_model";

/** Python traits of RouterView (attnwidgets/widgets/routers.py). */
export interface RouterTraits extends WireTraits<"routers"> {
  layer: number;
  selection: number[];
  weighted: boolean;
  theme: string;
  fit: "auto" | boolean | number[];
  _error: string;
}

export type RouterMeta = RouterTraits["_meta"];

/** The strip's heading (plots/routers.py STRIP_TITLE is the same). */
export const STRIP_TITLE = "top expert of each token (strength: its gate weight)";

/** The routing decoded: experts and gate weights, both (L, T, k) row-major. */
export interface Routes {
  experts: Int32Array;
  weights: Float32Array;
  nLayers: number;
  nTokens: number;
  k: number;
}

/** Decode the payload (expert indices arrive as floats: exact in float32, and in a saved page's float16 too). */
export function decodeRoutes(payload: RouterTraits["_payload"]): Routes {
  const e = decode(payload.experts);
  const w = decode(payload.weights);
  const [nLayers, nTokens, k] = e.shape;
  return { experts: Int32Array.from(e.data, (v) => Math.round(v)), weights: w.data, nLayers, nTokens, k };
}

/** The (expert, gate weight) pairs of token `t` in layer row `li`, highest gate first (the model's order). */
export function choices(r: Routes, li: number, t: number): Array<[number, number]> {
  const at = (li * r.nTokens + t) * r.k;
  return Array.from({ length: r.k }, (_, j) => [r.experts[at + j], r.weights[at + j]]);
}

/**
 * Each expert's share (0..1) of layer row `li`'s routing over `selection` (every token when empty): of the
 * token-slot assignments, or with `weighted` of the gate weight. RouterResult.load's row, computed here so that a
 * click redraws the bars without a kernel.
 */
export function loadOver(
  r: Routes,
  li: number,
  selection: number[],
  weighted: boolean,
  nExperts: number,
): Float64Array {
  const out = new Float64Array(nExperts);
  const rows = selection.length ? selection : Array.from({ length: r.nTokens }, (_, t) => t);
  for (const t of rows) for (const [e, w] of choices(r, li, t)) out[e] += weighted ? w : 1;
  let total = 0;
  for (const v of out) total += v;
  if (total > 0) for (let e = 0; e < nExperts; e++) out[e] /= total;
  return out;
}

/** RGB (0..255) of `expert`'s cell at gate `weight`: its palette colour mixed with white, strength
 * floor + (1 - floor) x weight (viewdata/views/routers.py expert_rgb). */
export function expertRgb(
  meta: Pick<RouterMeta, "palette" | "fade_floor">,
  expert: number,
  weight: number,
): [number, number, number] {
  const base = hexToRgb(meta.palette[expert % meta.palette.length]);
  const s = meta.fade_floor + (1 - meta.fade_floor) * Math.max(0, Math.min(1, weight));
  return base.map((c) => Math.round(c * s + 255 * (1 - s))) as [number, number, number];
}

/** The bars' title (viewdata/views/routers.py load_title writes the same). */
export function loadTitle(layer: number, selection: number[], weighted: boolean): string {
  const s = selection;
  const contiguous = s.length > 0 && s[s.length - 1] - s[0] === s.length - 1;
  const where = !s.length
    ? "all tokens"
    : s.length === 1
      ? `token ${s[0]}`
      : contiguous
        ? `tokens ${s[0]}–${s[s.length - 1]}`
        : `${s.length} tokens`;
  return `${weighted ? "gate weight" : "load"} per expert, layer ${layer}, ${where}`;
}

/** The caption under the view: how cells and bars read. */
export function routerCaption(
  meta: Pick<RouterMeta, "top_k" | "n_experts" | "renormalised">,
  layer: number,
  weighted: boolean,
): string {
  const balanced = (100 / meta.n_experts).toFixed(1);
  return (
    "Cells: the top expert of each token (colour; its gate weight is the strength), numbered with the " +
    `${meta.top_k} experts chosen. Bars: each expert's share of layer ${layer}'s ` +
    `${weighted ? "gate weight" : "assignments"}; dashed: a balanced router (${balanced} %).` +
    (meta.renormalised ? "" : " This router does not renormalise its top-k gates (they sum to less than 1).")
  );
}

/** The cell's label: its k experts, "3·1". */
export function cellLabel(pairs: Array<[number, number]>): string {
  return pairs.map(([e]) => String(e)).join("·");
}

/** The tooltip of a cell: the token, its layer, and every chosen expert with its gate weight. */
export function cellTip(token: string, t: number, layer: number, pairs: Array<[number, number]>): string {
  const lines = pairs.map(([e, w]) => `expert ${e}: gate ${w.toFixed(3)}`);
  return [`token ${t} ${token}`, `layer ${layer}`, ...lines].join("\n");
}

/** Where the strip and the bars sit on the canvas (CSS px). */
export interface RouterLayout {
  width: number;
  height: number;
  labelW: number; // token labels left of the strip
  top: number; // the strip's first row (the layer numbers above it)
  cellW: number;
  cellH: number;
  nLayers: number;
  nTokens: number;
  barsX: number; // the bars' plot: left, top, width, height
  barsY: number;
  barsW: number;
  barsH: number;
  nExperts: number;
}

/** The tallest the strip's rows may be together (CSS px): at a device pixel ratio of 2, under the 32,767 px a
 * canvas may be high. */
export const MAX_STRIP = 15000;

/** Lay the strip and the bars out for `font`-px text, within `room` (null: the theme's full size); `titleW` is the
 * bars' title's width. */
export function routerLayout(
  o: { nLayers: number; nTokens: number; nExperts: number; labelW: number; font: number; titleW?: number },
  room: { width: number; height: number } | null,
): RouterLayout {
  const top = Math.round(o.font * 3.2);
  const bottom = Math.round(o.font * 1.2);
  // A long text's rows thin out: the canvas stays under MAX_STRIP px (browsers leave a taller canvas blank).
  const full = Math.max(
    1,
    Math.min(Math.round(o.font * 1.7), Math.floor(MAX_STRIP / Math.max(1, o.nTokens))),
  );
  const cellH = room
    ? Math.max(
        Math.min(4, full),
        Math.min(full, Math.floor((room.height - top - bottom) / Math.max(1, o.nTokens))),
      )
    : full;
  const cellW = Math.round(o.font * 3.4);
  const stripW = o.labelW + o.nLayers * cellW;
  const axis = Math.round(o.font * 3.2); // the bars' y ticks
  const gap = Math.round(o.font * 2);
  const natural = Math.max(Math.round(o.font * 16), o.nExperts * Math.round(o.font * 1.6));
  const barsW = room
    ? Math.max(o.font * 8, Math.min(natural, room.width - stripW - gap - axis - 8))
    : natural;
  const stripH = top + o.nTokens * cellH + bottom;
  const barsH = Math.max(o.font * 8, Math.min(Math.round(o.font * 14), stripH - top - o.font * 3));
  // The bars' title starts over their axis: room for it too, unless the room given is narrower.
  const titled = stripW + gap + (o.titleW ?? 0) + 8;
  const width = Math.max(stripW + gap + axis + barsW + 8, room ? Math.min(room.width, titled) : titled);
  return {
    width,
    height: Math.max(stripH, top + barsH + o.font * 3),
    labelW: o.labelW,
    top,
    cellW,
    cellH,
    nLayers: o.nLayers,
    nTokens: o.nTokens,
    barsX: stripW + gap + axis,
    barsY: top,
    barsW,
    barsH,
    nExperts: o.nExperts,
  };
}

/** What is under (x, y): a cell (token row, layer row), a layer's number above the strip, a token's label, or an
 * expert's bar. */
export type RouterHit =
  | { what: "cell"; t: number; li: number }
  | { what: "layer"; li: number }
  | { what: "token"; t: number }
  | { what: "bar"; e: number }
  | null;

export function routerHit(l: RouterLayout, x: number, y: number): RouterHit {
  const col = Math.floor((x - l.labelW) / l.cellW);
  const row = Math.floor((y - l.top) / l.cellH);
  const inCols = x >= l.labelW && col < l.nLayers;
  if (inCols && y >= l.top && row < l.nTokens) return { what: "cell", t: row, li: col };
  if (inCols && y < l.top && y >= l.top - l.cellH * 1.6) return { what: "layer", li: col };
  if (x >= 0 && x < l.labelW && y >= l.top && row < l.nTokens) return { what: "token", t: row };
  if (x >= l.barsX && x < l.barsX + l.barsW && y >= l.barsY && y < l.barsY + l.barsH) {
    const e = Math.floor(((x - l.barsX) / l.barsW) * l.nExperts);
    return { what: "bar", e: Math.min(l.nExperts - 1, e) };
  }
  return null;
}

export function sameHit(a: NonNullable<RouterHit>, b: NonNullable<RouterHit>): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
