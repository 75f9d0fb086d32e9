// Helpers of the teaching explorers (views/positional, views/mask_explorer): rectangular panel geometry, axis ticks,
// a labelled slider built with DOM APIs only, the caption and the row of panels. What only one of them uses lives in
// its view (mask_explorer/state.ts: byte sizes, divisors, positions typed; positional/state.ts: diverging pixels).

import { h, listen } from "../shared/dom";

/** Where a rows x cols panel sits: cells fill a box of at most maxW x maxH, never larger than maxCell. */
export interface PanelGeometry {
  rows: number;
  cols: number;
  x0: number;
  y0: number;
  cw: number; // cell width, CSS px (may be fractional)
  ch: number; // cell height
  w: number; // grid width
  h: number; // grid height
}

export function panelGeometry(
  rows: number,
  cols: number,
  maxW: number,
  maxH: number,
  x0: number,
  y0: number,
  maxCell = 28,
): PanelGeometry {
  const cw = Math.min(maxCell, maxW / Math.max(cols, 1));
  const ch = Math.min(maxCell, maxH / Math.max(rows, 1));
  return { rows, cols, x0, y0, cw, ch, w: cw * cols, h: ch * rows };
}

/** The (row, col) cell under CSS pixel (x, y), or null outside the grid. */
export function panelCellAt(g: PanelGeometry, x: number, y: number): { row: number; col: number } | null {
  if (x < g.x0 || y < g.y0) return null;
  const col = Math.floor((x - g.x0) / g.cw);
  const row = Math.floor((y - g.y0) / g.ch);
  if (row < 0 || col < 0 || row >= g.rows || col >= g.cols) return null;
  return { row, col };
}

/** About `count` round tick indices in 0..n-1, always including the first and the last. */
export function tickIndices(n: number, count = 5): number[] {
  if (n <= 1) return [0];
  const raw = (n - 1) / Math.max(count - 1, 1);
  const mag = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let i = 0; i < n - 1; i += step) out.push(i);
  if (out.length > 1 && n - 1 - out[out.length - 1] < step / 2) out.pop();
  out.push(n - 1);
  return out;
}

/** A labelled range slider whose number shows while dragging; `commit` runs once the user lets go. */
export function slider(
  label: string,
  opts: { min: number; max: number; step?: number; value: number; testid: string },
  commit: (v: number) => void,
  cleanups: Array<() => void>,
): { wrap: HTMLLabelElement; input: HTMLInputElement } {
  const input = h("input", {
    type: "range",
    min: opts.min,
    max: opts.max,
    step: opts.step ?? 1,
    "aria-label": label,
    "data-testid": opts.testid,
  });
  input.value = String(opts.value);
  const out = h("span", { className: "aw-muted", text: String(opts.value) });
  cleanups.push(
    listen(input, "input", () => {
      out.textContent = input.value;
    }),
    listen(input, "change", () => commit(Number(input.value))),
  );
  return { wrap: h("label", {}, label, input, out), input };
}

/** The explorers' caption (what the picture shows) and the wrapping row of panels under it, `gap` px apart. */
export function captionAndRow(gap: number): { caption: HTMLDivElement; row: HTMLDivElement } {
  const caption = h("div", { className: "aw-muted aw-caption", "data-testid": "caption" });
  caption.style.maxWidth = "900px";
  caption.style.margin = "4px 0 8px";
  const row = h("div", {});
  row.style.display = "flex";
  row.style.gap = `${gap}px`;
  row.style.flexWrap = "wrap";
  return { caption, row };
}
