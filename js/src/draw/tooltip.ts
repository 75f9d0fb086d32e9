// The tooltip every widget floats over its canvases: one box per widget, placed next to the mouse within the
// widget's root and flipped to the left of the mouse where it would run past the root's right edge.

import { h, listen } from "../shared/dom";

/** The widget's tooltip box (hidden until shown; `data-testid="tooltip"` for the browser tests). */
export function tooltipBox(): HTMLDivElement {
  return h("div", { className: "aw-tooltip", "data-testid": "tooltip" });
}

/** Tooltip's left/top (px, relative to the widget root) for a mouse at (x, y): right of the pointer, or left of it
 * when a box `w` wide would pass the root's width `boxW`. */
export function tooltipPosition(
  x: number,
  y: number,
  w: number,
  boxW: number,
): { left: number; top: number } {
  const right = x + 14;
  const left = right + w > boxW ? Math.max(0, x - 14 - w) : right;
  return { left, top: y + 14 };
}

/** Show `text` in the tooltip at the mouse of `e`, with `data` added to its dataset (what the tests read).
 * `flip: false` keeps it right of the pointer even at the root's right edge (the matrix views scroll instead). */
export function showTooltip(
  tooltip: HTMLElement,
  root: HTMLElement,
  e: MouseEvent,
  text: string,
  data: Record<string, string> = {},
  flip = true,
): void {
  tooltip.textContent = text;
  Object.assign(tooltip.dataset, data);
  tooltip.style.display = "block";
  const rootRect = root.getBoundingClientRect();
  const pos = tooltipPosition(
    e.clientX - rootRect.left,
    e.clientY - rootRect.top,
    tooltip.offsetWidth,
    flip ? rootRect.width : Number.POSITIVE_INFINITY,
  );
  tooltip.style.left = `${pos.left}px`;
  tooltip.style.top = `${pos.top}px`;
}

export function hideTooltip(tooltip: HTMLElement): void {
  tooltip.style.display = "none";
}

/** How a canvas answers the mouse: what is under it, when two hits are the same, the tooltip for a hit, and what to
 * do when the hovered thing changes (null: nothing hovered, also on leaving the canvas). */
export interface HoverSpec<H> {
  hitAt(e: MouseEvent): H | null;
  same(a: H, b: H): boolean;
  tip(hit: H): { text: string; data: Record<string, string> };
  changed(hit: H | null): void;
  /** false: keep the tooltip right of the pointer at the root's right edge (the matrix views scroll instead). */
  flip?: boolean;
  /** True while the pointer's moves belong to something else (a drag that pans): no hover then. */
  skip?(e: MouseEvent): boolean;
}

/** Tooltips over `canvas` (placed in `root`) and a `changed` call each time the hovered thing changes; returns the
 * listeners' cleanups. */
export function hoverTooltip<H>(
  canvas: HTMLElement,
  root: HTMLElement,
  tooltip: HTMLElement,
  spec: HoverSpec<H>,
): Array<() => void> {
  let last: H | null = null;
  return [
    listen(canvas, "mousemove", (e: MouseEvent) => {
      if (spec.skip?.(e)) return;
      const hit = spec.hitAt(e);
      if (hit === null) {
        hideTooltip(tooltip);
        if (last !== null) {
          last = null;
          spec.changed(null);
        }
        return;
      }
      const { text, data } = spec.tip(hit);
      showTooltip(tooltip, root, e, text, data, spec.flip ?? true);
      if (last === null || !spec.same(last, hit)) {
        last = hit;
        spec.changed(hit);
      }
    }),
    listen(canvas, "mouseleave", () => {
      hideTooltip(tooltip);
      last = null;
      spec.changed(null);
    }),
  ];
}
