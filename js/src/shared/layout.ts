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
}

export function heatmapLayout(o: LayoutOptions): HeatmapLayout {
  const maxGrid = o.maxGrid ?? 560;
  const maxCell = o.maxCell ?? 28;
  const n = Math.max(o.nq, o.nk, 1);
  let cell = Math.min(maxCell, maxGrid / n);
  if (cell >= 2) cell = Math.floor(cell);
  const showLabels = cell >= (o.minLabelCell ?? 9);
  const x0 = showLabels ? o.labelWidth : 4;
  const y0 = showLabels ? o.labelHeight : 4;
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
export { tokenLabel } from "./text";
