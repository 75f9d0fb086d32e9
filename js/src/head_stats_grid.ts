// HeadStatsGrid: a layers x heads grid coloured by one per-head statistic chosen from a menu.
// Mirrors attnwidgets/widgets/head_stats_grid.py. Every statistic arrives at once as one (S, L, H) float32 buffer,
// so the menu repaints without asking the kernel; a click sets the synced `layer`/`head` traits.

import { decode } from "./shared/buffers";
import { type ColorMapName, rgbAt } from "./shared/colors";
import { h, resetControls } from "./shared/dom";
import { drawLegend, prepareCanvas, textMeasurer } from "./shared/draw";
import { fitWatcher } from "./shared/fit";
import { fitGridWidth } from "./shared/fit_views";
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
  type GridLayout,
  fmt,
  gridCellAt,
  gridLayout,
  headLabel,
  repaintOnResize,
  roomFor,
  statRange,
  textOn,
} from "./shared/heads";
import type { RenderProps } from "./shared/model";
import { arrowKeysSelect, clickToSelect, sameHead } from "./shared/selection";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hoverTooltip, tooltipBox } from "./shared/tooltip";
import { scrolledCanvas, widgetShell } from "./shared/widget_shell";

/** Python traits of HeadStatsGrid (attnwidgets/widgets/head_stats_grid.py and its base, widgets/_headstats.py). */
export interface HeadStatsGridTraits extends HeadWidgetTraits, SpanTraits {
  statistic: string;
  colormap: string; // "" = the theme's
  fit: "auto" | boolean | number[]; // shared/fit.ts
}

function render({ model, el }: RenderProps<HeadStatsGridTraits>): () => void {
  const shell = widgetShell(model, el, "aw-head-stats-grid");
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const { scroll, canvas } = scrolledCanvas("grid-canvas");
  const legendCanvas = h("canvas");
  const legendMin = h("span", { className: "aw-muted", "data-export-text": "" });
  const legendMax = h("span", { className: "aw-muted", "data-export-text": "" });
  const legendLabel = h("span", { className: "aw-muted", "data-export-text": "" });
  const legend = h("div", { className: "aw-legend" }, legendMin, legendCanvas, legendMax, legendLabel);
  legend.style.flexWrap = "wrap"; // a narrow (fitted, or half of head_roles_view) grid: the label goes below
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, scroll, legend, tooltip);
  const selecting = statSelection(model, root, cleanups); // query tokens: statistics of their rows
  root.insertBefore(selecting.el, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let values: Float32Array = new Float32Array(0);
  let layout: GridLayout | null = null;
  let hover: { layer: number; head: number } | null = null;
  const controls: Array<() => void> = [];

  const meta = () => model.get("_meta");

  const slice = (name: string) => statSlice(values, meta().names, meta().shape, name);

  function buildControls(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    resetControls(controls, bar);
    const m = meta();
    const opts = m.names.map((n): [string, string] => [n, m.labels[n] ?? n]);
    bar.append(h("label", {}, "colour by", traitMenu(model, "statistic", opts, "statistic", controls)));
    if (m.can_words) bar.append(wordsToggle(model, controls));
    const spanBar = selecting.controls(controls);
    if (spanBar) bar.append(spanBar);
    bar.append(shell.exportControls(controls));
  }

  function paint(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const m = meta();
    const [nLayers, nHeads] = m.shape;
    const stat = model.get("statistic");
    const data = slice(stat);
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const [lo, hi] = data ? statRange(data) : [0, 1];
    const font = `${t.font}px ${t.fontFamily}`;
    const probe = textMeasurer();
    probe.font = font;
    const left = Math.ceil(probe.measureText(String(nLayers - 1)).width) + t.font * 2 + 8;
    const top = t.font * 2 + 10;
    layout = gridLayout(
      nLayers,
      nHeads,
      fitGridWidth(Math.round(Math.min(t.maxGrid * 1.15, roomFor(el) - left - 24)), fit.room(scroll), {
        nLayers,
        nHeads,
        left,
        top,
      }),
      left,
      top,
      t.maxCell * 2,
      6,
    );
    const g = layout;
    const ctx = prepareCanvas(canvas, g.width, g.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, g.width, g.height);
    ctx.font = font;
    const showValues = g.cell >= probe.measureText("0.000").width + 6 && g.cell >= t.font * 2;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let layer = 0; layer < nLayers; layer++) {
      for (let head = 0; head < nHeads; head++) {
        const v = data ? data[layer * nHeads + head] : Number.NaN;
        const x = g.x0 + head * g.cell;
        const y = g.y0 + layer * g.cell;
        const rgb: [number, number, number] = Number.isFinite(v)
          ? rgbAt(map, v - lo, hi - lo)
          : [235, 235, 235];
        ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
        ctx.fillRect(x, y, g.cell, g.cell);
        if (showValues) {
          ctx.fillStyle = textOn(rgb);
          ctx.fillText(Number.isFinite(v) ? v.toFixed(2) : "–", x + g.cell / 2, y + g.cell / 2);
        }
      }
    }
    // Thin white lines between cells keep neighbours apart on any colour map.
    ctx.strokeStyle = t.bg;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let i = 1; i < nHeads; i++) {
      ctx.moveTo(g.x0 + i * g.cell + 0.5, g.y0);
      ctx.lineTo(g.x0 + i * g.cell + 0.5, g.y0 + nLayers * g.cell);
    }
    for (let i = 1; i < nLayers; i++) {
      ctx.moveTo(g.x0, g.y0 + i * g.cell + 0.5);
      ctx.lineTo(g.x0 + nHeads * g.cell, g.y0 + i * g.cell + 0.5);
    }
    ctx.stroke();
    // Row and column numbers, axis names.
    const sel = { layer: model.get("layer"), head: model.get("head") };
    const labelEvery = Math.max(1, Math.ceil((t.font * 1.6) / g.cell));
    ctx.textAlign = "right";
    for (let layer = 0; layer < nLayers; layer++) {
      ctx.fillStyle = layer === sel.layer ? t.accent : t.fg;
      ctx.fillText(String(layer), g.x0 - 5, g.y0 + (layer + 0.5) * g.cell);
    }
    ctx.textAlign = "center";
    for (let head = 0; head < nHeads; head += labelEvery) {
      ctx.fillStyle = head === sel.head ? t.accent : t.fg;
      ctx.fillText(String(head), g.x0 + (head + 0.5) * g.cell, g.y0 - t.font * 0.7);
    }
    ctx.fillStyle = t.muted;
    ctx.fillText("head", g.x0 + (nHeads * g.cell) / 2, t.font * 0.7);
    ctx.save();
    ctx.translate(t.font * 0.8, g.y0 + (nLayers * g.cell) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText("layer", 0, 0);
    ctx.restore();
    // Hover and selection outlines (the whole row when head is -1).
    if (hover) {
      ctx.strokeStyle = t.muted;
      ctx.lineWidth = 2;
      ctx.strokeRect(g.x0 + hover.head * g.cell + 1, g.y0 + hover.layer * g.cell + 1, g.cell - 2, g.cell - 2);
    }
    if (sel.layer >= 0 && sel.layer < nLayers && sel.head < nHeads) {
      const x = g.x0 + (sel.head < 0 ? 0 : sel.head * g.cell);
      const w = sel.head < 0 ? nHeads * g.cell : g.cell;
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 3;
      ctx.strokeRect(x + 1.5, g.y0 + sel.layer * g.cell + 1.5, w - 3, g.cell - 3);
    }
    Object.assign(canvas.dataset, {
      x0: String(g.x0),
      y0: String(g.y0),
      cell: String(g.cell),
      nLayers: String(nLayers),
      nHeads: String(nHeads),
      statistic: stat,
      selected: `${sel.layer}/${sel.head}`,
      vmin: String(lo),
      vmax: String(hi),
    });
    drawLegend(legendCanvas, map);
    legendMin.textContent = fmt(lo, 2);
    legendMax.textContent = fmt(hi, 2);
    legendLabel.textContent = m.labels[stat] ?? stat;
    title.textContent = `${userText(m.title)} · ${m.labels[stat] ?? stat}`;
    showError(data ? model.get("_error") : `unknown statistic ${stat}`);
  }

  function load(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    try {
      values = decode(model.get("_payload").stats).data;
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    selecting.update();
    buildControls();
    paint();
  }

  function cellFor(e: MouseEvent): { layer: number; head: number } | null {
    if (!layout) return null;
    const rect = canvas.getBoundingClientRect();
    return gridCellAt(layout, e.clientX - rect.left, e.clientY - rect.top);
  }

  cleanups.push(
    ...hoverTooltip(canvas, root, tooltip, {
      hitAt: cellFor,
      same: sameHead,
      tip: (hit) => {
        const m = meta();
        const stat = model.get("statistic");
        const data = slice(stat);
        const v = data ? data[hit.layer * m.shape[1] + hit.head] : Number.NaN;
        return {
          text: `head ${headLabel(hit.layer, hit.head)} (layer ${hit.layer}, head ${hit.head})\n${m.labels[stat] ?? stat}: ${fmt(v)}`,
          data: { layer: String(hit.layer), head: String(hit.head), value: String(v) },
        };
      },
      changed: (hit) => {
        hover = hit;
        paint();
      },
    }),
    clickToSelect(canvas, model, cellFor, paint),
    arrowKeysSelect(root, model, () => meta().shape),
  );

  followStats(model, cleanups, controls, {
    menu: "statistic",
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
