// HeadClusterMap's drawing: the heads as points (one colour per layer, or a statistic's colour map), the selected and
// hovered heads named, and the legend (state.ts says what).

import { drawLegend, prepareCanvas } from "../../draw/canvas";
import { type ColorMapName, categorical, rgbAt } from "../../draw/colors";
import { fitLength } from "../../draw/fit_views";
import { fmt, headLabel, roomFor, scatterLayout, statRange, toPixel } from "../../draw/heads";
import { type StatGrid, headOf, isSelected } from "../../draw/stat_grid";
import { h } from "../../shared/dom";
import { type Theme, applyTheme, theme } from "../../shared/theme";
import { type HeadClusterMapTraits, clusterTitle, paintOrder, pointRadius } from "./state";

/** The map's elements, and the points' pixel positions after a paint (for hit tests). */
export interface ClusterDom {
  canvas: HTMLCanvasElement;
  legend: HTMLDivElement;
  px: Float64Array; // pixel x, y of each point
  radius: number;
}

type Map = StatGrid<HeadClusterMapTraits, number>;

/** The legend: a coloured "●" per layer (text, so PNG/SVG exports keep it), or the colour bar of a statistic. */
function buildLegend(
  legend: HTMLElement,
  m: HeadClusterMapTraits["_meta"],
  colour: { map: ColorMapName; color: string; lo: number; hi: number },
): void {
  legend.replaceChildren();
  const text = (s: string) => h("span", { className: "aw-muted", text: s, "data-export-text": "" });
  if (colour.color === "layer") {
    legend.append(text("layer"));
    for (let layer = 0; layer < m.shape[0]; layer++) {
      const dot = h("span", { text: "●", "data-export-text": "" });
      dot.style.color = categorical(layer);
      legend.append(
        h(
          "span",
          { className: "aw-swatch" },
          dot,
          h("span", { text: String(layer), "data-export-text": "" }),
        ),
      );
    }
    return;
  }
  const bar = h("canvas");
  drawLegend(bar, colour.map);
  legend.append(
    text(fmt(colour.lo, 2)),
    bar,
    text(fmt(colour.hi, 2)),
    text(m.labels[colour.color] ?? colour.color),
  );
}

/** The points, the selection on top; then the selected and hovered heads' names. */
function drawPoints(
  ctx: CanvasRenderingContext2D,
  dom: ClusterDom,
  t: Theme,
  o: { k: number; nHeads: number; data: Float32Array | null; map: ColorMapName; lo: number; hi: number },
  sel: { layer: number; head: number },
  hover: number,
): void {
  const { px, radius } = dom;
  const isSel = (i: number) => isSelected(sel, headOf(i, o.nHeads).layer, headOf(i, o.nHeads).head);
  const order = paintOrder(o.k, o.nHeads, sel);
  for (const i of order) {
    let fill: string;
    if (o.data) {
      const v = o.data[i];
      const rgb = Number.isFinite(v) ? rgbAt(o.map, v - o.lo, o.hi - o.lo) : [200, 200, 200];
      fill = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
    } else fill = categorical(headOf(i, o.nHeads).layer);
    ctx.beginPath();
    ctx.arc(px[2 * i], px[2 * i + 1], isSel(i) ? radius + 2 : radius, 0, 2 * Math.PI);
    ctx.fillStyle = fill;
    ctx.fill();
    ctx.lineWidth = isSel(i) ? 3 : 1;
    ctx.strokeStyle = isSel(i) ? t.accent : i === hover ? t.fg : "rgba(0,0,0,0.45)";
    ctx.stroke();
  }
  ctx.font = `${t.font}px ${t.fontFamily}`;
  ctx.textBaseline = "bottom";
  ctx.textAlign = "center";
  const named = new Set<number>(order.filter(isSel));
  if (hover >= 0) named.add(hover);
  for (const i of named) {
    const { layer, head } = headOf(i, o.nHeads);
    const label = headLabel(layer, head);
    const [x, y] = [px[2 * i], px[2 * i + 1] - radius - 4];
    ctx.lineWidth = 3;
    ctx.strokeStyle = t.bg;
    ctx.strokeText(label, x, y);
    ctx.fillStyle = t.fg;
    ctx.fillText(label, x, y);
  }
}

/** Paint the map, the legend and the title from the points `xy` ((K, 2) MDS coordinates). */
export function paintMap(g: Map, dom: ClusterDom, xy: Float32Array): void {
  const { model, shell } = g;
  const t = theme(model.get("theme"));
  applyTheme(shell.root, t);
  const m = model.get("_meta");
  const [nLayers, nHeads] = m.shape;
  const k = Math.min(nLayers * nHeads, xy.length / 2);
  const color = model.get("color");
  const data = color === "layer" ? null : g.slice(color);
  const map = (model.get("colormap") || t.colormap) as ColorMapName;
  const [lo, hi] = data ? statRange(data) : [0, 1];
  dom.radius = pointRadius(t.font);
  const natural = Math.max(240, Math.round(Math.min(t.maxGrid * 0.85, roomFor(g.el) - 20)));
  const room = g.fit.room(dom.canvas); // fitted: the square plot takes what the title, menu, legend and note leave
  const size = room ? fitLength(fitLength(natural, room.width, 8, 160), room.height, 4, 160) : natural;
  const layout = scatterLayout(xy.subarray(0, 2 * k), size, dom.radius + t.font + 6);
  const ctx = prepareCanvas(dom.canvas, layout.width, layout.height);
  ctx.fillStyle = t.bg;
  ctx.fillRect(0, 0, layout.width, layout.height);
  ctx.strokeStyle = t.grid;
  ctx.strokeRect(0.5, 0.5, layout.width - 1, layout.height - 1);
  dom.px = new Float64Array(2 * k);
  for (let i = 0; i < k; i++) [dom.px[2 * i], dom.px[2 * i + 1]] = toPixel(layout, xy[2 * i], xy[2 * i + 1]);
  const sel = { layer: model.get("layer"), head: model.get("head") };
  drawPoints(ctx, dom, t, { k, nHeads, data, map, lo, hi }, sel, g.hover ?? -1);
  dom.canvas.dataset.points = JSON.stringify(Array.from(dom.px, (v) => Math.round(v * 10) / 10));
  Object.assign(dom.canvas.dataset, {
    color,
    selected: `${sel.layer}/${sel.head}`,
    radius: String(dom.radius),
  });
  buildLegend(dom.legend, m, { map, color, lo, hi });
  shell.title.textContent = clusterTitle(m, color);
}
