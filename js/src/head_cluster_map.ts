// HeadClusterMap: heads as points placed by MDS on the Jensen–Shannon distances between their attention, coloured
// by layer or by a statistic. Mirrors attnwidgets/widgets/head_cluster_map.py. Points and statistics arrive as
// binary buffers; the colour menu repaints without the kernel; a click sets the synced `layer`/`head` traits.

import { type Packed, decode } from "./shared/buffers";
import { type ColorMapName, categorical, rgbAt } from "./shared/colors";
import { h, resetControls } from "./shared/dom";
import { drawLegend, prepareCanvas } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { fitLength } from "./shared/fit_views";
import {
  type HeadWidgetMeta,
  type HeadWidgetTraits,
  type SpanTraits,
  followStats,
  hasStats,
  statSelection,
  statSlice,
  traitMenu,
  wordsToggle,
} from "./shared/head_stats";
import {
  type ScatterLayout,
  fmt,
  headLabel,
  nearestPoint,
  repaintOnResize,
  roomFor,
  scatterLayout,
  statRange,
  toPixel,
} from "./shared/heads";
import type { RenderProps } from "./shared/model";
import { arrowKeysSelect, clickToSelect } from "./shared/selection";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hoverTooltip, tooltipBox } from "./shared/tooltip";
import { widgetShell } from "./shared/widget_shell";

/** Python traits of HeadClusterMap (attnwidgets/widgets/head_cluster_map.py and its base, widgets/_headstats.py). */
export interface HeadClusterMapTraits extends HeadWidgetTraits, SpanTraits {
  color: string; // "layer" or a statistic name
  colormap: string;
  fit: "auto" | boolean | number[]; // shared/fit.ts
  // stats: (S, L, H) float32 as every HeadWidget; points: (K, 2) float32 MDS coordinates, k = layer * H + head
  _payload: { stats: Packed; points: Packed };
  _meta: HeadWidgetMeta & {
    colors: Array<[string, string]>; // colour menu: "layer" then the statistics
  };
}

function render({ model, el }: RenderProps<HeadClusterMapTraits>): () => void {
  const shell = widgetShell(model, el, "aw-head-cluster-map");
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const canvas = h("canvas", { className: "aw-canvas", "data-testid": "cluster-canvas" });
  const legend = h("div", { className: "aw-legend", "data-testid": "legend" });
  legend.style.flexWrap = "wrap";
  const note = h("div", {
    className: "aw-muted",
    text:
      "Close points: heads that attend alike (MDS of Jensen–Shannon distances; the axes mean nothing). " +
      "Arrow keys: ← → head, ↑ ↓ layer.",
  });
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, canvas, legend, note, tooltip);
  const selecting = statSelection(model, root, cleanups); // query tokens: statistics of their rows
  root.insertBefore(selecting.el, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let xy: Float32Array = new Float32Array(0);
  let values: Float32Array = new Float32Array(0);
  let px: Float64Array = new Float64Array(0); // pixel x, y of each point
  let layout: ScatterLayout | null = null;
  let hover = -1;
  let radius = 6;
  const controls: Array<() => void> = [];

  const meta = () => model.get("_meta");

  const slice = (name: string) => statSlice(values, meta().names, meta().shape, name);

  function buildControls(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    resetControls(controls, bar);
    const m = meta();
    const opts: Array<[string, string]> = m.colors.map(([v]) => [
      v,
      v === "layer" ? "layer" : (m.labels[v] ?? v),
    ]);
    bar.append(h("label", {}, "colour by", traitMenu(model, "color", opts, "colour by", controls)));
    if (m.can_words) bar.append(wordsToggle(model, controls));
    const spanBar = selecting.controls(controls);
    if (spanBar) bar.append(spanBar);
    bar.append(shell.exportControls(controls));
  }

  function buildLegend(map: ColorMapName, color: string, lo: number, hi: number): void {
    legend.replaceChildren();
    const m = meta();
    if (color === "layer") {
      legend.append(h("span", { className: "aw-muted", text: "layer", "data-export-text": "" }));
      for (let layer = 0; layer < m.shape[0]; layer++) {
        // A coloured "●" (text, so PNG/SVG exports keep the legend), then the layer number.
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
    drawLegend(bar, map);
    legend.append(
      h("span", { className: "aw-muted", text: fmt(lo, 2), "data-export-text": "" }),
      bar,
      h("span", { className: "aw-muted", text: fmt(hi, 2), "data-export-text": "" }),
      h("span", { className: "aw-muted", text: m.labels[color] ?? color, "data-export-text": "" }),
    );
  }

  function paint(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const m = meta();
    const [nLayers, nHeads] = m.shape;
    const k = Math.min(nLayers * nHeads, xy.length / 2);
    const color = model.get("color");
    const data = color === "layer" ? null : slice(color);
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const [lo, hi] = data ? statRange(data) : [0, 1];
    radius = t.font >= 18 ? 9 : 6;
    const natural = Math.max(240, Math.round(Math.min(t.maxGrid * 0.85, roomFor(el) - 20)));
    const room = fit.room(canvas); // fitted: the square plot takes what the title, menu, legend and note leave
    const size = room ? fitLength(fitLength(natural, room.width, 8, 160), room.height, 4, 160) : natural;
    layout = scatterLayout(xy.subarray(0, 2 * k), size, radius + t.font + 6);
    const ctx = prepareCanvas(canvas, layout.width, layout.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, layout.width, layout.height);
    ctx.strokeStyle = t.grid;
    ctx.strokeRect(0.5, 0.5, layout.width - 1, layout.height - 1);
    px = new Float64Array(2 * k);
    for (let i = 0; i < k; i++) [px[2 * i], px[2 * i + 1]] = toPixel(layout, xy[2 * i], xy[2 * i + 1]);
    const sel = { layer: model.get("layer"), head: model.get("head") };
    const isSel = (i: number) =>
      Math.floor(i / nHeads) === sel.layer && (sel.head === -1 || i % nHeads === sel.head);
    // Unselected points first, the selection on top.
    const order = Array.from({ length: k }, (_, i) => i).sort((a, b) => Number(isSel(a)) - Number(isSel(b)));
    for (const i of order) {
      const layer = Math.floor(i / nHeads);
      let fill: string;
      if (data) {
        const v = data[i];
        const rgb = Number.isFinite(v) ? rgbAt(map, v - lo, hi - lo) : [200, 200, 200];
        fill = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      } else fill = categorical(layer);
      ctx.beginPath();
      ctx.arc(px[2 * i], px[2 * i + 1], isSel(i) ? radius + 2 : radius, 0, 2 * Math.PI);
      ctx.fillStyle = fill;
      ctx.fill();
      ctx.lineWidth = isSel(i) ? 3 : 1;
      ctx.strokeStyle = isSel(i) ? t.accent : i === hover ? t.fg : "rgba(0,0,0,0.45)";
      ctx.stroke();
    }
    // Name the selected head (one point, or the layer's) and the hovered one.
    ctx.font = `${t.font}px ${t.fontFamily}`;
    ctx.textBaseline = "bottom";
    ctx.textAlign = "center";
    const named = new Set<number>(order.filter(isSel));
    if (hover >= 0) named.add(hover);
    for (const i of named) {
      const label = headLabel(Math.floor(i / nHeads), i % nHeads);
      const [x, y] = [px[2 * i], px[2 * i + 1] - radius - 4];
      ctx.lineWidth = 3;
      ctx.strokeStyle = t.bg;
      ctx.strokeText(label, x, y);
      ctx.fillStyle = t.fg;
      ctx.fillText(label, x, y);
    }
    canvas.dataset.points = JSON.stringify(Array.from(px, (v) => Math.round(v * 10) / 10));
    Object.assign(canvas.dataset, { color, selected: `${sel.layer}/${sel.head}`, radius: String(radius) });
    buildLegend(map, color, lo, hi);
    title.textContent = `${userText(m.title)} · head map, coloured by ${color === "layer" ? "layer" : (m.labels[color] ?? color)}`;
  }

  function load(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    try {
      xy = decode(model.get("_payload").points).data;
      values = decode(model.get("_payload").stats).data;
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    selecting.update();
    buildControls();
    paint();
  }

  function pointFor(e: MouseEvent): number {
    const rect = canvas.getBoundingClientRect();
    return nearestPoint(px, e.clientX - rect.left, e.clientY - rect.top, radius + 4);
  }

  cleanups.push(
    ...hoverTooltip(canvas, root, tooltip, {
      hitAt: (e) => {
        const i = pointFor(e);
        return i < 0 ? null : i;
      },
      same: (a, b) => a === b,
      tip: (i) => {
        const m = meta();
        const nHeads = m.shape[1];
        const [layer, head] = [Math.floor(i / nHeads), i % nHeads];
        const lines = [`${headLabel(layer, head)} (layer ${layer}, head ${head})`];
        const color = model.get("color");
        const shown = color === "layer" ? [] : [color];
        for (const name of ["entropy", "sep", "cls"]) if (!shown.includes(name)) shown.push(name);
        for (const name of shown) {
          const data = slice(name);
          if (data) lines.push(`${m.labels[name] ?? name}: ${fmt(data[i])}`);
        }
        const v = color === "layer" ? layer : (slice(color)?.[i] ?? Number.NaN);
        return {
          text: lines.join("\n"),
          data: { layer: String(layer), head: String(head), value: String(v) },
        };
      },
      changed: (i) => {
        hover = i ?? -1;
        paint();
      },
    }),
  );
  /** The head of the point under the mouse, or null. */
  function headFor(e: MouseEvent): { layer: number; head: number } | null {
    const i = pointFor(e);
    const nHeads = meta().shape[1];
    return i < 0 ? null : { layer: Math.floor(i / nHeads), head: i % nHeads };
  }

  cleanups.push(
    clickToSelect(canvas, model, headFor, paint),
    arrowKeysSelect(root, model, () => meta().shape),
  );

  followStats(model, cleanups, controls, {
    menu: "color",
    repaintOn: ["colormap"],
    reloadOn: ["_payload", "_meta"],
    paint,
    buildControls,
    load,
  });

  cleanups.push(repaintOnResize(el, paint));
  return shell.close;
}

export default { render };
