// Geometry of a heatmap: where the grid sits, how big a cell is, which cell a pixel falls in.

export interface HeatmapLayout {
  nq: number;
  nk: number;
  cell: number; // CSS pixels per cell (may be fractional for long inputs)
  x0: number; // left edge of the grid
  y0: number; // top edge of the grid
  width: number; // whole canvas, CSS pixels
  height: number;
  showLabels: boolean;
}

export interface LayoutOptions {
  nq: number;
  nk: number;
  maxGrid?: number; // largest grid side in CSS pixels
  maxCell?: number;
  labelWidth: number; // room for query labels (left)
  labelHeight: number; // room for key labels (top)
  minLabelCell?: number; // below this cell size, labels are hidden (hover shows tokens)
  maxWidth?: number; // fit (draw/fit.ts): the whole canvas, labels included, at most this wide
  maxHeight?: number; // ... and this tall
}

export function heatmapLayout(o: LayoutOptions): HeatmapLayout {
  const maxGrid = o.maxGrid ?? 560;
  const maxCell = o.maxCell ?? 28;
  const n = Math.max(o.nq, o.nk, 1);
  const nq = Math.max(o.nq, 1);
  const nk = Math.max(o.nk, 1);
  // A fitted canvas keeps its labels' room inside the box: the grid gets what is left.
  const inBox = (x0: number, y0: number) =>
    Math.min(
      o.maxWidth !== undefined ? (o.maxWidth - x0 - 4) / nk : Number.POSITIVE_INFINITY,
      o.maxHeight !== undefined ? (o.maxHeight - y0 - 4) / nq : Number.POSITIVE_INFINITY,
    );
  const sized = (x0: number, y0: number) => {
    const c = Math.max(Math.min(maxCell, maxGrid / n, inBox(x0, y0)), 0.05);
    return c >= 2 ? Math.floor(c) : c;
  };
  let cell = sized(o.labelWidth, o.labelHeight);
  const showLabels = cell >= (o.minLabelCell ?? 9);
  const x0 = showLabels ? o.labelWidth : 4;
  const y0 = showLabels ? o.labelHeight : 4;
  if (!showLabels) cell = Math.min(sized(x0, y0), o.minLabelCell ?? 9); // the labels' room goes to the grid
  return {
    nq: o.nq,
    nk: o.nk,
    cell,
    x0,
    y0,
    width: Math.ceil(x0 + cell * o.nk + 4),
    height: Math.ceil(y0 + cell * o.nq + 4),
    showLabels,
  };
}

/** The (query, key) cell under CSS pixel (x, y), or null outside the grid. */
export function cellAt(l: HeatmapLayout, x: number, y: number): { q: number; k: number } | null {
  const k = Math.floor((x - l.x0) / l.cell);
  const q = Math.floor((y - l.y0) / l.cell);
  if (x < l.x0 || y < l.y0 || k < 0 || q < 0 || k >= l.nk || q >= l.nq) return null;
  return { q, k };
}

/** Centre of a cell in CSS pixels (tests and keyboard focus use it). */
export function cellCenter(l: HeatmapLayout, q: number, k: number): { x: number; y: number } {
  return { x: l.x0 + (k + 0.5) * l.cell, y: l.y0 + (q + 0.5) * l.cell };
}

// Token labels live in text.ts with the rest of the rules for user text; re-exported for the views that import them here.
export { tokenLabel } from "../shared/text";
