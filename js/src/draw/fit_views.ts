// Fit to screen for the per-head views (grid, bars, scatter, compare, generation, ablation): what each may draw at
// inside the room `fitWatcher(...).room(part)` gives (draw/fit.ts). Pure, for tests; each only ever shrinks.

import type { Box } from "./fit";

/** The grid width (what `gridLayout` takes as maxWidth) that keeps a layers x heads grid of square cells, its
 * `left` labels and `top` header inside `room` (null: not fitting, `natural` as it is). */
export function fitGridWidth(
  natural: number,
  room: Box | null,
  g: { nLayers: number; nHeads: number; left: number; top: number },
): number {
  if (!room) return natural;
  const byHeight = Math.floor((room.height - g.top - 4) / Math.max(1, g.nLayers)) * Math.max(1, g.nHeads);
  const byWidth = room.width - g.left - 8;
  return Math.max(6 * Math.max(1, g.nHeads), Math.min(natural, byHeight, byWidth));
}

/** A length (a plot's height or width) no larger than what `room` leaves after `chrome` px of axes and labels. */
export function fitLength(natural: number, room: number | undefined, chrome: number, min = 60): number {
  if (room === undefined) return natural;
  return Math.max(min, Math.min(natural, Math.floor(room - chrome)));
}

/** The CSS zoom (at most 1) that brings an element of `natural` size inside `room`, for views made of many HTML
 * parts that cannot size themselves (null room: 1). Never below `min`, so text stays readable. */
export function fitZoom(natural: Box, room: Box | null, min = 0.55): number {
  if (!room) return 1;
  const s = Math.min(1, room.width / Math.max(1, natural.width), room.height / Math.max(1, natural.height));
  return Math.max(min, Math.floor(s * 100) / 100);
}
