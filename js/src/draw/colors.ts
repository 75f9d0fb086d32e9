// Colour maps as 256-entry lookup tables, and a categorical palette for heads.
// "viridis" and "cividis" are colour-blind safe and the lecture theme's default.

import type { ColorMapName } from "../shared/theme";
import { SEQUENTIAL_STOPS } from "./colormap_stops";

// The map names are the theme's vocabulary (shared/theme.ts), so the kernel never imports the drawing modules.
export type { ColorMapName } from "../shared/theme";

// Generated from matplotlib (js/scripts/colormaps.py), so a widget and its static twin draw the same colours.
const STOPS: Record<ColorMapName, string[]> = SEQUENTIAL_STOPS;

export function hexToRgb(hex: string): [number, number, number] {
  const v = Number.parseInt(hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

const cache = new Map<string, Uint8ClampedArray>();

/** 256 RGB triples (flat, length 768) interpolated linearly between the map's stops. */
export function lut(name: ColorMapName): Uint8ClampedArray {
  const hit = cache.get(name);
  if (hit) return hit;
  const stops = (STOPS[name] ?? STOPS.blues).map(hexToRgb);
  const out = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (stops.length - 1);
    const j = Math.min(Math.floor(t), stops.length - 2);
    const f = t - j;
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round(stops[j][c] * (1 - f) + stops[j + 1][c] * f);
  }
  cache.set(name, out);
  return out;
}

/** Index into a LUT for value v on the scale [0, vmax]; values outside are clamped. */
export function lutIndex(v: number, vmax: number): number {
  if (!(vmax > 0) || !Number.isFinite(v)) return 0;
  return Math.max(0, Math.min(255, Math.round((v / vmax) * 255)));
}

export function rgbAt(name: ColorMapName, v: number, vmax: number): [number, number, number] {
  const table = lut(name);
  const i = lutIndex(v, vmax) * 3;
  return [table[i], table[i + 1], table[i + 2]];
}

// Okabe–Ito (colour-blind safe) then Tableau-like extras, for up to 20+ heads (cycled after).
const CATEGORICAL = [
  "#0072B2",
  "#E69F00",
  "#009E73",
  "#D55E00",
  "#CC79A7",
  "#56B4E9",
  "#F0E442",
  "#000000",
  "#8c564b",
  "#7f7f7f",
  "#bcbd22",
  "#17becf",
  "#1f77b4",
  "#ff7f0e",
  "#2ca02c",
  "#d62728",
];

export function categorical(i: number): string {
  return CATEGORICAL[((i % CATEGORICAL.length) + CATEGORICAL.length) % CATEGORICAL.length];
}

/** WCAG relative luminance of an sRGB colour "#rrggbb" (0 black .. 1 white). */
export function luminance(hex: string): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const [r, g, b] = hexToRgb(hex);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** WCAG contrast ratio of two colours (1 .. 21). */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** ``hex`` darkened (mixed towards black, hue kept) until its contrast with ``bg`` is at least ``ratio``: a head's
 * colour drawn alone on white (yellow #F0E442 is 1.2 : 1) reads from the back of a room. */
export function readableOn(hex: string, bg: string, ratio = 4.5): string {
  const [r, g, b] = hexToRgb(hex);
  for (let k = 0; k <= 20; k++) {
    const f = 1 - k / 20;
    const hex2 = (c: number) =>
      Math.round(c * f)
        .toString(16)
        .padStart(2, "0");
    const out = `#${hex2(r)}${hex2(g)}${hex2(b)}`;
    if (contrast(out, bg) >= ratio) return out;
  }
  return "#000000";
}
