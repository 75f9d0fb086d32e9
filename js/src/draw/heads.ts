// Geometry and formatting for the per-head widgets (EntropyBars, HeadStatsGrid, HeadClusterMap): one number per
// (layer, head), bars grouped by layer, a layers x heads grid, an MDS scatter. Pure functions, unit-tested.

/** "layer-head", 0-based, as every per-head widget labels a head. */
export function headLabel(layer: number, head: number): string {
  return head < 0 ? `${layer}-all` : `${layer}-${head}`;
}

/** A statistic's value for a tooltip: three decimals, "n/a" for NaN. */
export function fmt(v: number, digits = 3): string {
  return Number.isFinite(v) ? v.toFixed(digits) : "n/a";
}

/** [min, max] of the finite values ([0, 1] when there are none; widened when all are equal). */
export function finiteRange(data: ArrayLike<number>): [number, number] {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (!Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) return [0, 1];
  if (lo === hi) return lo === 0 ? [0, 1] : [Math.min(0, lo), Math.max(0, hi)];
  return [lo, hi];
}

/** The colour scale of a statistic: from 0 when all values are >= 0 (shares, entropies), else the data range. */
export function statRange(data: ArrayLike<number>): [number, number] {
  const [lo, hi] = finiteRange(data);
  return lo >= 0 ? [0, hi > 0 ? hi : 1] : [lo, hi];
}

/** Roughly `count` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten apart). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => (hi - lo) / s <= count + 0.5) ?? 10 * p;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toFixed(10)));
  return out;
}

/** Black or white, whichever reads better on an RGB background. */
export function textOn(rgb: [number, number, number]): string {
  const [r, g, b] = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum > 0.36 ? "#000000" : "#ffffff";
}

// -- bars grouped by layer ------------------------------------------------------------------------------------

export interface BarLayout {
  nLayers: number;
  nHeads: number;
  x0: number; // left edge of the first bar
  y0: number; // top of the plot area
  plotW: number;
  plotH: number;
  barW: number;
  barGap: number; // between the bars of one layer
  groupGap: number; // between layers
  groupW: number; // one layer's bars plus its gap
  width: number; // whole canvas
  height: number;
}

export interface BarOptions {
  nLayers: number;
  nHeads: number;
  targetWidth: number; // about how wide the plot area should be
  plotH: number;
  left: number; // room for the y axis
  top: number;
  bottom: number; // room for the layer labels
  right: number; // room for the baseline label
}

export function barLayout(o: BarOptions): BarLayout {
  const n = Math.max(1, o.nLayers * o.nHeads);
  const groupGap = Math.max(6, Math.round(o.targetWidth / Math.max(1, o.nLayers) / 12));
  const per = (o.targetWidth - groupGap * o.nLayers) / n;
  const barGap = per >= 6 ? 1 : 0;
  const barW = Math.max(2, Math.min(22, Math.floor(per - barGap)));
  const groupW = o.nHeads * (barW + barGap) - barGap + groupGap;
  const plotW = o.nLayers * groupW;
  const x0 = o.left + groupGap / 2;
  return {
    nLayers: o.nLayers,
    nHeads: o.nHeads,
    x0,
    y0: o.top,
    plotW,
    plotH: o.plotH,
    barW,
    barGap,
    groupGap,
    groupW,
    width: Math.ceil(o.left + plotW + o.right),
    height: Math.ceil(o.top + o.plotH + o.bottom),
  };
}

/** Left edge of the bar of (layer, head). */
export function barX(l: BarLayout, layer: number, head: number): number {
  return l.x0 + layer * l.groupW + head * (l.barW + l.barGap);
}

/** The bar under CSS pixel (x, y): any height in the plot's column, so short bars are easy to hit. */
export function barAt(l: BarLayout, x: number, y: number): { layer: number; head: number } | null {
  if (y < l.y0 || y > l.y0 + l.plotH) return null;
  const rel = x - l.x0;
  const layer = Math.floor((rel + l.groupGap / 2) / l.groupW);
  if (layer < 0 || layer >= l.nLayers) return null;
  const within = rel - layer * l.groupW;
  const head = Math.floor(within / (l.barW + l.barGap));
  if (within < 0 || head < 0 || head >= l.nHeads || within - head * (l.barW + l.barGap) > l.barW) return null;
  return { layer, head };
}

// -- the layers x heads grid ----------------------------------------------------------------------------------

export interface GridLayout {
  nLayers: number;
  nHeads: number;
  cell: number;
  x0: number;
  y0: number;
  width: number;
  height: number;
}

/** Square cells as large as fit (between minCell and maxCell), layers as rows and heads as columns. */
export function gridLayout(
  nLayers: number,
  nHeads: number,
  maxWidth: number,
  left: number,
  top: number,
  maxCell = 56,
  minCell = 6,
): GridLayout {
  const cell = Math.max(minCell, Math.min(maxCell, Math.floor(maxWidth / Math.max(1, nHeads))));
  return {
    nLayers,
    nHeads,
    cell,
    x0: left,
    y0: top,
    width: Math.ceil(left + cell * nHeads + 4),
    height: Math.ceil(top + cell * nLayers + 4),
  };
}

export function gridCellAt(g: GridLayout, x: number, y: number): { layer: number; head: number } | null {
  const head = Math.floor((x - g.x0) / g.cell);
  const layer = Math.floor((y - g.y0) / g.cell);
  if (x < g.x0 || y < g.y0 || head >= g.nHeads || layer >= g.nLayers) return null;
  return { layer, head };
}

// -- the scatter ----------------------------------------------------------------------------------------------

export interface ScatterLayout {
  ox: number; // pixel x = ox + sx * x
  oy: number; // pixel y = oy - sy * y (up is up)
  s: number; // one scale for both axes: MDS distances mean the same in every direction
  width: number;
  height: number;
}

/** Fit points (flat x, y pairs) into a size x size square with `pad` pixels free on every side. */
export function scatterLayout(xy: ArrayLike<number>, size: number, pad: number): ScatterLayout {
  let x0 = Number.POSITIVE_INFINITY;
  let x1 = Number.NEGATIVE_INFINITY;
  let y0 = Number.POSITIVE_INFINITY;
  let y1 = Number.NEGATIVE_INFINITY;
  for (let i = 0; i + 1 < xy.length; i += 2) {
    x0 = Math.min(x0, xy[i]);
    x1 = Math.max(x1, xy[i]);
    y0 = Math.min(y0, xy[i + 1]);
    y1 = Math.max(y1, xy[i + 1]);
  }
  if (!(x1 >= x0)) [x0, x1, y0, y1] = [0, 1, 0, 1];
  const span = Math.max(x1 - x0, y1 - y0, 1e-12);
  const s = (size - 2 * pad) / span;
  const ox = pad + (size - 2 * pad - s * (x1 - x0)) / 2 - s * x0;
  const oy = size - pad - (size - 2 * pad - s * (y1 - y0)) / 2 + s * y0;
  return { ox, oy, s, width: size, height: size };
}

export function toPixel(l: ScatterLayout, x: number, y: number): [number, number] {
  return [l.ox + l.s * x, l.oy - l.s * y];
}

/** Index of the point nearest to (x, y) within `radius` pixels, or -1. `px` holds pixel x, y pairs. */
export function nearestPoint(px: ArrayLike<number>, x: number, y: number, radius: number): number {
  let best = -1;
  let bestD = radius * radius;
  for (let i = 0; i + 1 < px.length; i += 2) {
    const d = (px[i] - x) ** 2 + (px[i + 1] - y) ** 2;
    if (d <= bestD) {
      bestD = d;
      best = i / 2;
    }
  }
  return best;
}

/** Width the widget may use: the element's own, or Infinity before it is attached. */
export function roomFor(el: HTMLElement): number {
  const w = el.clientWidth || el.parentElement?.clientWidth || 0;
  return w > 0 ? w : Number.POSITIVE_INFINITY;
}

/** Repaint a view that sizes itself by {@link roomFor} whenever the room it has changes: the first paint can come
 * before the output area is laid out (room unknown, so the view drew at full size and was clipped), and a resized
 * window or side panel changes it later. Returns the cleanup. */
export function repaintOnResize(el: HTMLElement, paint: () => void): () => void {
  if (typeof ResizeObserver === "undefined") return () => {};
  let room = roomFor(el);
  let frame = 0;
  const observer = new ResizeObserver(() => {
    const now = roomFor(el);
    if (now === room) return;
    room = now;
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => paint());
  });
  observer.observe(el);
  return () => {
    cancelAnimationFrame(frame);
    observer.disconnect();
  };
}

/** Query heads grouped by the key/value head they read (GQA: query head h reads key/value head
 * h // (heads / kv heads)): [[0, 1], [2, 3]] for 4 heads on 2; null when none are shared (nKv 0 = unknown, or one
 * key/value head per query head). The head view's swatches and the ablation grid outline these groups. */
export function kvGroups(nHeads: number, nKv: number): number[][] | null {
  if (!(nKv > 0) || nKv >= nHeads || nHeads % nKv !== 0) return null;
  const size = nHeads / nKv;
  return Array.from({ length: nKv }, (_, g) => Array.from({ length: size }, (_, i) => g * size + i));
}
