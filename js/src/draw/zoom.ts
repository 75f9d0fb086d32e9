// Zoom and pan over a heatmap grid, in cell units, and the tiles a zoomed view needs at full detail.
// Pure functions (unit-tested in test/zoom.test.ts); js/src/views/heatmap/ owns the state and the events.

import type { HeatmapLayout } from "./layout";

/** z = magnification (1 = whole matrix); q0/k0 = the top-left visible cell (fractional), in full-detail cells. */
export interface Zoom {
  z: number;
  q0: number;
  k0: number;
}

export const NO_ZOOM: Zoom = { z: 1, q0: 0, k0: 0 };

/** Largest useful magnification: cells of about 40 CSS pixels (and at least 1). */
export function maxZoom(l: HeatmapLayout): number {
  return Math.max(1, 40 / l.cell);
}

/** Keep the view inside the matrix and the magnification within [1, maxZoom]. */
export function clampZoom(l: HeatmapLayout, v: Zoom): Zoom {
  const z = Math.min(maxZoom(l), Math.max(1, v.z));
  const q0 = Math.min(Math.max(0, v.q0), l.nq - l.nq / z);
  const k0 = Math.min(Math.max(0, v.k0), l.nk - l.nk / z);
  return { z, q0: Math.max(0, q0), k0: Math.max(0, k0) };
}

/** The zoom that shows query rows [q0, q1) and key columns [k0, k1) whole, centred (a region asked for from Python:
 * AttentionHeatmap.zoom). */
export function zoomTo(l: HeatmapLayout, q0: number, q1: number, k0: number, k1: number): Zoom {
  const z = Math.min(l.nq / Math.max(1, q1 - q0), l.nk / Math.max(1, k1 - k0));
  const zc = Math.min(maxZoom(l), Math.max(1, z));
  return clampZoom(l, { z: zc, q0: (q0 + q1) / 2 - l.nq / zc / 2, k0: (k0 + k1) / 2 - l.nk / zc / 2 });
}

/** Zoom by `factor` keeping the cell under CSS pixel (x, y) where it is (wheel zoom about the cursor). */
export function zoomAt(l: HeatmapLayout, v: Zoom, factor: number, x: number, y: number): Zoom {
  const cz = l.cell * v.z;
  const cq = v.q0 + (y - l.y0) / cz;
  const ck = v.k0 + (x - l.x0) / cz;
  const z = Math.min(maxZoom(l), Math.max(1, v.z * factor));
  const cz2 = l.cell * z;
  return clampZoom(l, { z, q0: cq - (y - l.y0) / cz2, k0: ck - (x - l.x0) / cz2 });
}

/** Pan by (dx, dy) CSS pixels (dragging right moves the view left). */
export function panBy(l: HeatmapLayout, v: Zoom, dx: number, dy: number): Zoom {
  const cz = l.cell * v.z;
  return clampZoom(l, { z: v.z, q0: v.q0 - dy / cz, k0: v.k0 - dx / cz });
}

/** The full-detail cell under CSS pixel (x, y) in a zoomed view, or null outside the grid. */
export function cellAtZoom(l: HeatmapLayout, v: Zoom, x: number, y: number): { q: number; k: number } | null {
  if (x < l.x0 || y < l.y0 || x >= l.x0 + l.cell * l.nk || y >= l.y0 + l.cell * l.nq) return null;
  const cz = l.cell * v.z;
  const q = Math.floor(v.q0 + (y - l.y0) / cz);
  const k = Math.floor(v.k0 + (x - l.x0) / cz);
  if (q < 0 || k < 0 || q >= l.nq || k >= l.nk) return null;
  return { q, k };
}

/** The query row under CSS pixel (x, y) (a cell, or the row's label left of the grid), or null: what a click
 * selects. With NO_ZOOM, the row of an unzoomed map. */
export function rowAtZoom(l: HeatmapLayout, v: Zoom, x: number, y: number): number | null {
  if (y < l.y0 || y >= l.y0 + l.cell * l.nq || x > l.x0 + l.cell * l.nk) return null;
  const q = Math.floor(v.q0 + (y - l.y0) / (l.cell * v.z));
  return q >= 0 && q < l.nq ? q : null;
}

/** Visible cells: rows [q0, q1) and columns [k0, k1), whole cells, clipped to the matrix. */
export function visibleCells(l: HeatmapLayout, v: Zoom): { q0: number; q1: number; k0: number; k1: number } {
  return {
    q0: Math.max(0, Math.floor(v.q0)),
    q1: Math.min(l.nq, Math.ceil(v.q0 + l.nq / v.z)),
    k0: Math.max(0, Math.floor(v.k0)),
    k1: Math.min(l.nk, Math.ceil(v.k0 + l.nk / v.z)),
  };
}

export interface Tile {
  ti: number;
  tj: number;
  q0: number;
  q1: number;
  k0: number;
  k1: number;
}

/** Tiles of `size` x `size` cells covering the visible cells (none when more than `maxCells` cells are visible). */
export function tilesFor(l: HeatmapLayout, v: Zoom, size = 256, maxCells = 512 * 512): Tile[] {
  const r = visibleCells(l, v);
  if ((r.q1 - r.q0) * (r.k1 - r.k0) > maxCells) return [];
  const out: Tile[] = [];
  for (let ti = Math.floor(r.q0 / size); ti * size < r.q1; ti++) {
    for (let tj = Math.floor(r.k0 / size); tj * size < r.k1; tj++) {
      out.push({
        ti,
        tj,
        q0: ti * size,
        q1: Math.min(l.nq, (ti + 1) * size),
        k0: tj * size,
        k1: Math.min(l.nk, (tj + 1) * size),
      });
    }
  }
  return out;
}
