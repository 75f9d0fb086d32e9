// HeadClusterMap: heads as points placed by MDS on the Jensen–Shannon distances between their attention, coloured
// by layer or by a statistic. Mirrors attnwidgets/widgets/head_cluster_map.py. Points and statistics arrive as
// binary buffers; the colour menu repaints without the kernel; a click sets the synced `layer`/`head` traits.
// This file wires the parts up: the stat grids' skeleton (draw/stat_grid.ts), state.ts, paint.ts, controls.ts.

import { nearestPoint } from "../../draw/heads";
import { headOf, renderStatGrid } from "../../draw/stat_grid";
import { decode } from "../../shared/buffers";
import { h } from "../../shared/dom";
import type { RenderProps } from "../../shared/model";
import { colorMenu } from "./controls";
import { type ClusterDom, paintMap } from "./paint";
import { type HeadClusterMapTraits, clusterTip } from "./state";

export type { HeadClusterMapTraits } from "./state";

function render(props: RenderProps<HeadClusterMapTraits>): () => void {
  const canvas = h("canvas", { className: "aw-canvas", "data-testid": "cluster-canvas" });
  const legend = h("div", { className: "aw-legend", "data-testid": "legend" });
  legend.style.flexWrap = "wrap";
  const note = h("div", {
    className: "aw-muted",
    text:
      "Close points: heads that attend alike (MDS of Jensen–Shannon distances; the axes mean nothing). " +
      "Arrow keys: ← → head, ↑ ↓ layer.",
  });
  const dom: ClusterDom = { canvas, legend, px: new Float64Array(0), radius: 6 };
  let xy: Float32Array = new Float32Array(0);
  /** The point under the mouse, or -1. */
  const pointFor = (e: MouseEvent): number => {
    const rect = canvas.getBoundingClientRect();
    return nearestPoint(dom.px, e.clientX - rect.left, e.clientY - rect.top, dom.radius + 4);
  };
  return renderStatGrid<HeadClusterMapTraits, number>(props, {
    className: "aw-head-cluster-map",
    canvas,
    body: [canvas, legend, note],
    menu: "color",
    repaintOn: ["colormap"],
    controls: (g, list) => [colorMenu(g.model, list)],
    load: (g) => {
      xy = decode(g.model.get("_payload").points).data;
    },
    paint: (g) => paintMap(g, dom, xy),
    hitAt: (_g, e) => {
      const i = pointFor(e);
      return i < 0 ? null : i;
    },
    same: (a, b) => a === b,
    tip: (g, i) => clusterTip(g.model.get("_meta"), g.model.get("color"), g.slice, i),
    headAt: (g, e) => {
      const i = pointFor(e);
      return i < 0 ? null : headOf(i, g.model.get("_meta").shape[1]);
    },
  });
}

export default { render };
