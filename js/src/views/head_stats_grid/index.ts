// HeadStatsGrid: a layers x heads grid coloured by one per-head statistic chosen from a menu.
// Mirrors attnwidgets/widgets/head_stats_grid.py. Every statistic arrives at once as one (S, L, H) float32 buffer,
// so the menu repaints without asking the kernel; a click sets the synced `layer`/`head` traits.
// This file wires the parts up: the stat grids' skeleton (draw/stat_grid.ts), state.ts, paint.ts, controls.ts.

import { type GridLayout, gridCellAt } from "../../draw/heads";
import { type HeadPick, sameHead } from "../../draw/selection";
import { type StatGrid, renderStatGrid } from "../../draw/stat_grid";
import { h } from "../../shared/dom";
import type { RenderProps } from "../../shared/model";
import { scrolledCanvas } from "../../shared/widget_shell";
import { statisticMenu } from "./controls";
import { type GridDom, paintGrid } from "./paint";
import { type HeadStatsGridTraits, gridTip } from "./state";

export type { HeadStatsGridTraits } from "./state";

/** The grid's scroll box and canvas, and the legend under it. */
function gridDom(): { dom: GridDom; legend: HTMLDivElement } {
  const { scroll, canvas } = scrolledCanvas("grid-canvas");
  const text = () => h("span", { className: "aw-muted", "data-export-text": "" });
  const dom = {
    scroll,
    canvas,
    legendCanvas: h("canvas"),
    legendMin: text(),
    legendMax: text(),
    legendLabel: text(),
  };
  const legend = h(
    "div",
    { className: "aw-legend" },
    dom.legendMin,
    dom.legendCanvas,
    dom.legendMax,
    dom.legendLabel,
  );
  legend.style.flexWrap = "wrap"; // a narrow (fitted, or half of head_roles_view) grid: the label goes below
  return { dom, legend };
}

function render(props: RenderProps<HeadStatsGridTraits>): () => void {
  const { dom, legend } = gridDom();
  let layout: GridLayout | null = null;
  const cellFor = (g: StatGrid<HeadStatsGridTraits, HeadPick>, e: MouseEvent): HeadPick | null => {
    if (!layout) return null;
    const rect = dom.canvas.getBoundingClientRect();
    return gridCellAt(layout, e.clientX - rect.left, e.clientY - rect.top);
  };
  return renderStatGrid<HeadStatsGridTraits, HeadPick>(props, {
    className: "aw-head-stats-grid",
    canvas: dom.canvas,
    body: [dom.scroll, legend],
    menu: "statistic",
    repaintOn: ["colormap"],
    controls: (g, list) => [statisticMenu(g.model, list)],
    paint: (g) => {
      layout = paintGrid(g, dom);
    },
    hitAt: cellFor,
    same: sameHead,
    tip: (g, hit) => {
      const stat = g.model.get("statistic");
      return gridTip(g.model.get("_meta"), stat, g.slice(stat), hit);
    },
    headAt: cellFor,
  });
}

export default { render };
