// Diverging colour scales for signed values (query, key and value components): negative, white at zero, positive.
// Both are colour-blind safe (ColorBrewer RdBu and PuOr); the lecture theme uses PuOr.

import { hexToRgb } from "./colors";

export type DivergingName = "rdbu" | "puor";

const STOPS: Record<DivergingName, string[]> = {
  rdbu: ["#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d", "#b2182b"],
  puor: ["#542788", "#8073ac", "#b2abd2", "#d8daeb", "#f7f7f7", "#fee0b6", "#fdb863", "#e08214", "#b35806"],
};

/** RGB of value v on a symmetric scale [-vmax, vmax]; NaN and a zero scale give the middle colour. */
export function divergingRgb(name: DivergingName, v: number, vmax: number): [number, number, number] {
  const stops = STOPS[name] ?? STOPS.rdbu;
  const t = vmax > 0 && Number.isFinite(v) ? Math.max(-1, Math.min(1, v / vmax)) : 0;
  const pos = ((t + 1) / 2) * (stops.length - 1);
  const j = Math.min(Math.floor(pos), stops.length - 2);
  const f = pos - j;
  const a = hexToRgb(stops[j]);
  const b = hexToRgb(stops[j + 1]);
  return [0, 1, 2].map((c) => Math.round(a[c] * (1 - f) + b[c] * f)) as [number, number, number];
}

export function divergingCss(name: DivergingName, v: number, vmax: number): string {
  const [r, g, b] = divergingRgb(name, v, vmax);
  return `rgb(${r},${g},${b})`;
}

/** Largest absolute finite value (0 for none). */
export function absMax(...arrays: ArrayLike<number>[]): number {
  let m = 0;
  for (const a of arrays) {
    for (let i = 0; i < a.length; i++) {
      const v = Math.abs(a[i]);
      if (Number.isFinite(v) && v > m) m = v;
    }
  }
  return m;
}

/** Softmax of `x` over entries where `allowed` is true (others 0), computed stably. */
export function maskedSoftmax(x: ArrayLike<number>, allowed: ArrayLike<boolean | number>): Float64Array {
  let top = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < x.length; i++) if (allowed[i] && x[i] > top) top = x[i];
  const out = new Float64Array(x.length);
  if (!Number.isFinite(top)) return out;
  let sum = 0;
  for (let i = 0; i < x.length; i++) {
    if (!allowed[i]) continue;
    out[i] = Math.exp(x[i] - top);
    sum += out[i];
  }
  for (let i = 0; i < x.length; i++) out[i] /= sum;
  return out;
}
