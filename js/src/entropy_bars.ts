// EntropyBars: per-head attention entropy as bars grouped by layer, with the uniform baseline as a dashed line.
// Mirrors attnwidgets/widgets/entropy_bars.py. Every row choice's values arrive at once (one small float32 buffer),
// so the rows switch repaints without asking the kernel; a click sets the synced `layer`/`head` traits.

import { decode } from "./shared/buffers";
import { categorical } from "./shared/colors";
import { h, resetControls } from "./shared/dom";
import { prepareCanvas, textMeasurer } from "./shared/draw";
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
  type BarLayout,
  barAt,
  barLayout,
  barX,
  fmt,
  headLabel,
  niceTicks,
  repaintOnResize,
  roomFor,
} from "./shared/heads";
import { type MeasureMeta, measureToggle } from "./shared/measure";
import type { RenderProps } from "./shared/model";
import { arrowKeysSelect, clickToSelect, sameHead } from "./shared/selection";
import { userText } from "./shared/text";
import { applyTheme, theme } from "./shared/theme";
import { hoverTooltip, tooltipBox } from "./shared/tooltip";
import { scrolledCanvas, widgetShell } from "./shared/widget_shell";

/** Python traits of EntropyBars (attnwidgets/widgets/entropy_bars.py and its base, widgets/_headstats.py). */
export interface EntropyBarsTraits extends HeadWidgetTraits, SpanTraits {
  rows: string; // "all" | "cls" | "last"
  fit: "auto" | boolean | number[]; // shared/fit.ts
  measure: string; // "weights" | "norms" | "value_zeroing" (shared/measure.ts)
  _meta: HeadWidgetMeta &
    MeasureMeta & {
      rows: Array<[string, string]>; // [value, label] of the row choices this source has
      row_stat: Record<string, string>; // row choice -> statistic name
      baselines: Record<string, number | null>; // row choice -> uniform entropy (nats)
    };
}

function render({ model, el }: RenderProps<EntropyBarsTraits>): () => void {
  const shell = widgetShell(model, el, "aw-entropy-bars");
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const { scroll, canvas } = scrolledCanvas("bars-canvas");
  const caption = h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" });
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, scroll, caption, tooltip);
  const selecting = statSelection(model, root, cleanups); // query tokens: statistics of their rows
  root.insertBefore(selecting.el, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let values: Float32Array = new Float32Array(0);
  let layout: BarLayout | null = null;
  let lastAvail = 0;
  let hover: { layer: number; head: number } | null = null;
  const controls: Array<() => void> = [];

  const meta = () => model.get("_meta");

  /** (L, H) values of the current row choice, or null when the source lacks it. */
  function current(): Float32Array | null {
    const m = meta();
    return statSlice(values, m.names, m.shape, m.row_stat[model.get("rows")] ?? "");
  }

  function buildControls(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    resetControls(controls, bar);
    const m = meta();
    if (m.rows.length > 1) {
      bar.append(h("label", {}, "entropy of", traitMenu(model, "rows", m.rows, "rows", controls)));
    }
    if (m.can_words) bar.append(wordsToggle(model, controls));
    const measure = measureToggle(model, m, controls);
    if (measure) bar.append(measure);
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
    const data = current();
    const rows = model.get("rows");
    const base = m.baselines[rows] ?? null;
    const font = `${t.font}px ${t.fontFamily}`;
    let vmax = base ?? 0;
    if (data) for (const v of data) if (Number.isFinite(v) && v > vmax) vmax = v;
    const ticks = niceTicks(0, (vmax || 1) * 1.08, 5);
    const yTop = Math.max(ticks[ticks.length - 1], (vmax || 1) * 1.02);
    const probe = textMeasurer();
    probe.font = font;
    const tickW = Math.max(...ticks.map((v) => probe.measureText(v.toFixed(1)).width));
    const baseText = base === null ? "" : `uniform ${base.toFixed(2)}`;
    const left = Math.ceil(tickW) + t.font * 2 + 10;
    const right = Math.ceil(probe.measureText(baseText).width) + 12;
    const room = fit.room(scroll);
    const top = t.font;
    const bottom = t.font * 3 + 10;
    // The width the view may take: the output area's (or the fitted box's). Where `el` shrink-wraps the view (a
    // flex row, an ipywidgets box) its width is the bars' own last width, and sizing by it made every repaint
    // 24 px narrower: there, never go below the width found before.
    const measured = room ? room.width : roomFor(el);
    const wrapped = el.clientWidth > 0 && el.clientWidth <= root.offsetWidth + 1;
    const avail = wrapped ? Math.max(measured, lastAvail) : measured;
    lastAvail = avail;
    layout = barLayout({
      nLayers,
      nHeads,
      targetWidth: Math.max(200, Math.round(Math.min(t.maxGrid * 1.3, avail - left - right - 24))),
      plotH: fitLength(Math.round(t.maxGrid * 0.42), room?.height, top + bottom, 80),
      left,
      top,
      bottom,
      right,
    });
    const l = layout;
    const ctx = prepareCanvas(canvas, l.width, l.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, l.width, l.height);
    const y = (v: number) => l.y0 + l.plotH * (1 - v / yTop);
    const plotLeft = l.x0 - l.groupGap / 2;
    // Grid lines and y ticks.
    ctx.font = font;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    for (const v of ticks) {
      ctx.strokeStyle = t.grid;
      ctx.globalAlpha = 0.35; // light grid lines in every theme (the lecture theme's grid colour is black)
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(plotLeft, Math.round(y(v)) + 0.5);
      ctx.lineTo(plotLeft + l.plotW, Math.round(y(v)) + 0.5);
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.fillStyle = t.muted;
      ctx.fillText(v.toFixed(1), plotLeft - 4, y(v));
    }
    ctx.save();
    ctx.translate(t.font * 0.8, l.y0 + l.plotH / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillStyle = t.fg;
    ctx.fillText("entropy (nats)", 0, 0);
    ctx.restore();
    // Bars, one colour per layer; the selected head outlined and marked.
    const sel = { layer: model.get("layer"), head: model.get("head") };
    for (let layer = 0; layer < nLayers; layer++) {
      for (let head = 0; head < nHeads; head++) {
        const v = data ? data[layer * nHeads + head] : Number.NaN;
        const x = barX(l, layer, head);
        const isSel = layer === sel.layer && (sel.head === -1 || head === sel.head);
        const isHover = hover !== null && hover.layer === layer && hover.head === head;
        if (isHover || isSel) {
          ctx.fillStyle = isSel ? "rgba(0,0,0,0.07)" : "rgba(0,0,0,0.04)";
          ctx.fillRect(x - 1, l.y0, l.barW + 2, l.plotH);
        }
        if (!Number.isFinite(v)) continue;
        ctx.fillStyle = categorical(layer);
        ctx.globalAlpha = isSel || isHover ? 1 : 0.8;
        ctx.fillRect(x, y(v), l.barW, l.y0 + l.plotH - y(v));
        ctx.globalAlpha = 1;
        if (isSel) {
          ctx.strokeStyle = t.fg;
          ctx.lineWidth = 2;
          ctx.strokeRect(x, y(v), l.barW, l.y0 + l.plotH - y(v));
        }
      }
    }
    if (sel.layer >= 0 && sel.layer < nLayers && sel.head < nHeads) {
      // A marker under the selection, so it stays visible when the bar is tiny.
      const x0 = barX(l, sel.layer, Math.max(0, sel.head));
      const x1 = sel.head < 0 ? barX(l, sel.layer, nHeads - 1) + l.barW : x0 + l.barW;
      ctx.fillStyle = t.accent;
      ctx.fillRect(x0, l.y0 + l.plotH + 2, x1 - x0, 4);
    }
    // Axis and baseline.
    ctx.strokeStyle = t.fg;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(plotLeft, l.y0 + l.plotH + 0.5);
    ctx.lineTo(plotLeft + l.plotW, l.y0 + l.plotH + 0.5);
    ctx.stroke();
    if (base !== null) {
      ctx.save();
      ctx.strokeStyle = t.fg;
      ctx.lineWidth = 1.5;
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(plotLeft, y(base));
      ctx.lineTo(plotLeft + l.plotW, y(base));
      ctx.stroke();
      ctx.restore();
      ctx.textAlign = "left";
      ctx.fillStyle = t.fg;
      ctx.fillText(baseText, plotLeft + l.plotW + 6, y(base));
    }
    // Layer labels under each group.
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    for (let layer = 0; layer < nLayers; layer++) {
      const cx = barX(l, layer, 0) + (l.groupW - l.groupGap) / 2;
      ctx.fillStyle = layer === sel.layer ? t.accent : t.fg;
      ctx.fillText(String(layer), cx, l.y0 + l.plotH + 9);
    }
    ctx.fillStyle = t.muted;
    ctx.fillText(
      `layer (each bar one head, 0–${nHeads - 1})`,
      plotLeft + l.plotW / 2,
      l.y0 + l.plotH + t.font * 1.6 + 10,
    );

    Object.assign(canvas.dataset, {
      x0: String(l.x0),
      y0: String(l.y0),
      plotH: String(l.plotH),
      barW: String(l.barW),
      barGap: String(l.barGap),
      groupW: String(l.groupW),
      nLayers: String(nLayers),
      nHeads: String(nHeads),
      rows,
      selected: `${sel.layer}/${sel.head}`,
      baseline: base === null ? "" : String(base),
    });
    const rowLabel = m.rows.find(([r]) => r === rows)?.[1] ?? rows;
    title.textContent = `${userText(m.title)} · attention entropy, ${rowLabel}`;
    caption.textContent =
      (base === null
        ? "No uniform baseline in this source."
        : `Dashed line: entropy of uniform attention (${base.toFixed(3)} nats). `) +
      `Selected head ${headLabel(sel.layer, sel.head)}.`;
    if (!data) showError(`this source has no values for the ${rows} rows`);
  }

  function load(): void {
    if (!hasStats(model)) return; // drawn before the statistics arrived: wait for them
    try {
      values = decode(model.get("_payload").stats).data;
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
    selecting.update();
    buildControls();
    paint();
  }

  function hoverAt(e: MouseEvent): { layer: number; head: number } | null {
    if (!layout) return null;
    const rect = canvas.getBoundingClientRect();
    return barAt(layout, e.clientX - rect.left, e.clientY - rect.top);
  }

  cleanups.push(
    ...hoverTooltip(canvas, root, tooltip, {
      hitAt: (e) => (current() ? hoverAt(e) : null),
      same: sameHead,
      tip: (hit) => {
        const m = meta();
        const v = current()?.[hit.layer * m.shape[1] + hit.head] ?? Number.NaN;
        const rows = model.get("rows");
        const base = m.baselines[rows];
        const rowLabel = m.rows.find(([r]) => r === rows)?.[1] ?? rows;
        return {
          text:
            `head ${headLabel(hit.layer, hit.head)} (layer ${hit.layer}, head ${hit.head})\n` +
            `entropy, ${rowLabel}: ${fmt(v)} nats` +
            (base === null || base === undefined ? "" : `\nuniform: ${fmt(base)} nats`),
          data: { layer: String(hit.layer), head: String(hit.head), value: String(v) },
        };
      },
      changed: (hit) => {
        hover = hit;
        paint();
      },
    }),
    clickToSelect(canvas, model, hoverAt, paint),
    arrowKeysSelect(root, model, () => meta().shape),
  );

  followStats(model, cleanups, controls, {
    menu: "rows",
    repaintOn: [],
    reloadOn: ["_payload", "_meta"],
    paint,
    buildControls,
    load,
  });

  cleanups.push(repaintOnResize(el, paint));
  return shell.close;
}

export default { render };
