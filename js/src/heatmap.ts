// AttentionHeatmap: one head (or the mean of a layer's heads) as a query x key heatmap on a canvas.
// Mirrors attnwidgets/widgets/heatmap.py. Only the head on screen crosses from Python; other heads are fetched on
// demand by custom message and kept in the page.

import { type Packed, decode, maxOf } from "./shared/buffers";
import type { ColorMapName } from "./shared/colors";
import { h, listen, select } from "./shared/dom";
import { drawLabels, drawLegend, drawMatrix, labelRoom, prepareCanvas } from "./shared/draw";
import { exportButtons, safeName } from "./shared/export";
import { type HeatmapLayout, cellAt, heatmapLayout } from "./shared/layout";
import type { RenderProps, WidgetModel } from "./shared/model";
import { onModel } from "./shared/model";
import { Requester } from "./shared/requests";
import { applyTheme, injectCss, theme } from "./shared/theme";

/** Python traits of AttentionHeatmap (attnwidgets/widgets/heatmap.py). */
export interface HeatmapTraits {
  layer: number;
  head: number; // -1: mean over the layer's heads
  kind: string; // "self" | "encoder" | "decoder" | "cross"
  words: boolean;
  theme: string;
  colormap: string; // "" = the theme's
  _meta: {
    title: string;
    kinds: string[];
    shapes: Record<string, [number, number]>; // kind -> [layers, heads]
    tokens: Record<string, [string[], string[]]>; // kind -> [query tokens, key tokens], for the current `words`
    can_words: boolean;
  };
  _initial: { key: string; matrix: Packed } | Record<string, never>;
  _error: string;
}

export function viewKey(kind: string, layer: number, head: number, words: boolean): string {
  return `${kind}/${layer}/${head}/${words ? "w" : "t"}`;
}

function render({ model, el }: RenderProps<HeatmapTraits>): () => void {
  injectCss();
  const cleanups: Array<() => void> = [];
  const requester = new Requester(model);
  const root = h("div", { className: "aw-root aw-heatmap", tabindex: 0 });
  el.append(root);

  const title = h("div", { className: "aw-title" });
  const bar = h("div", { className: "aw-bar" });
  const errorBox = h("div", { className: "aw-error", role: "alert" });
  errorBox.style.display = "none";
  const scroll = h("div", { className: "aw-scroll" });
  const canvas = h("canvas", { className: "aw-canvas", "data-testid": "heatmap-canvas" });
  scroll.append(canvas);
  const tooltip = h("div", { className: "aw-tooltip", "data-testid": "tooltip" });
  const legendCanvas = h("canvas");
  const legendMax = h("span", { className: "aw-muted", "data-export-text": true });
  const legend = h(
    "div",
    { className: "aw-legend" },
    h("span", { className: "aw-muted", text: "0", "data-export-text": true }),
    legendCanvas,
    legendMax,
  );
  root.append(title, bar, errorBox, scroll, legend, tooltip);

  let layout: HeatmapLayout | null = null;
  let current: { key: string; data: Float32Array; vmax: number } | null = null;
  let hover: { q: number; k: number } | null = null;

  const showError = (msg: string) => {
    errorBox.textContent = msg;
    errorBox.style.display = msg ? "block" : "none";
  };

  const meta = () => model.get("_meta");
  const tokens = (): [string[], string[]] => meta().tokens[model.get("kind")] ?? [[], []];

  function buildControls(): void {
    bar.replaceChildren();
    const m = meta();
    const kind = model.get("kind");
    const [nLayers, nHeads] = m.shapes[kind] ?? [0, 0];
    if (m.kinds.length > 1) {
      const kindSel = select(
        m.kinds.map((k) => [k, k]),
        kind,
        "attention kind",
      );
      cleanups.push(listen(kindSel, "change", () => update({ kind: kindSel.value, layer: 0, head: 0 })));
      bar.append(h("label", {}, "attention", kindSel));
    }
    const layers: Array<[string, string]> = Array.from({ length: nLayers }, (_, i) => [String(i), String(i)]);
    const layerSel = select(layers, String(model.get("layer")), "layer");
    layerSel.dataset.testid = "layer-select";
    cleanups.push(listen(layerSel, "change", () => update({ layer: Number(layerSel.value) })));
    const heads: Array<[string, string]> = [["-1", "mean of heads"]];
    for (let i = 0; i < nHeads; i++) heads.push([String(i), String(i)]);
    const headSel = select(heads, String(model.get("head")), "head");
    headSel.dataset.testid = "head-select";
    cleanups.push(listen(headSel, "change", () => update({ head: Number(headSel.value) })));
    bar.append(h("label", {}, "layer", layerSel), h("label", {}, "head", headSel));
    if (m.can_words) {
      const box = h("input", { type: "checkbox", "aria-label": "word level" });
      box.checked = model.get("words");
      cleanups.push(listen(box, "change", () => update({ words: box.checked })));
      bar.append(h("label", {}, box, "words"));
    }
    bar.append(exportButtons(root, () => safeName(title.textContent ?? ""), cleanups));
  }

  function update(changes: Partial<Pick<HeatmapTraits, "layer" | "head" | "kind" | "words">>): void {
    for (const [k, v] of Object.entries(changes)) model.set(k as keyof HeatmapTraits, v as never);
    model.save_changes();
    refresh();
  }

  function paint(): void {
    if (!current) return;
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const map = (model.get("colormap") || t.colormap) as ColorMapName;
    const [queries, keys] = tokens();
    const nq = queries.length;
    const nk = keys.length;
    const probe = prepareCanvas(canvas, 10, 10);
    layout = heatmapLayout({
      nq,
      nk,
      maxGrid: t.maxGrid,
      maxCell: t.maxCell,
      labelWidth: labelRoom(probe, queries, t),
      labelHeight: labelRoom(probe, keys, t),
      minLabelCell: Math.min(t.font, 12) - 2,
    });
    const ctx = prepareCanvas(canvas, layout.width, layout.height);
    ctx.fillStyle = t.bg;
    ctx.fillRect(0, 0, layout.width, layout.height);
    drawMatrix(
      ctx,
      current.data,
      nq,
      nk,
      layout.x0,
      layout.y0,
      layout.cell * nk,
      layout.cell * nq,
      current.vmax,
      map,
    );
    drawLabels(ctx, layout, queries, keys, t, hover);
    if (hover) {
      ctx.strokeStyle = t.accent;
      ctx.lineWidth = 2;
      ctx.strokeRect(
        layout.x0 + hover.k * layout.cell,
        layout.y0 + hover.q * layout.cell,
        layout.cell,
        layout.cell,
      );
    }
    // Geometry for tests and assistive tools.
    Object.assign(canvas.dataset, {
      x0: String(layout.x0),
      y0: String(layout.y0),
      cell: String(layout.cell),
      nq: String(nq),
      nk: String(nk),
      view: current.key,
      vmax: String(current.vmax),
    });
    drawLegend(legendCanvas, map);
    legendMax.textContent = current.vmax.toFixed(3);
    const kind = model.get("kind");
    const head = model.get("head");
    title.textContent = `${meta().title} · ${kind} attention · layer ${model.get("layer")} · ${
      head < 0 ? "mean of heads" : `head ${head}`
    }${model.get("words") ? " · words" : ""}`;
  }

  function accept(key: string, packed: Packed): void {
    const m = decode(packed);
    current = { key, data: m.data, vmax: maxOf(m.data) || 1 };
    paint();
  }

  async function refresh(): Promise<void> {
    const key = viewKey(model.get("kind"), model.get("layer"), model.get("head"), model.get("words"));
    const initial = model.get("_initial");
    if (initial && "key" in initial && initial.key === key) {
      accept(key, initial.matrix);
      return;
    }
    try {
      const reply = await requester.get(key, {
        what: "matrix",
        kind: model.get("kind"),
        layer: model.get("layer"),
        head: model.get("head"),
        words: model.get("words"),
      });
      const now = viewKey(model.get("kind"), model.get("layer"), model.get("head"), model.get("words"));
      if (now !== key) return; // the user moved on while we waited
      const c = reply.content as { shape: number[]; dtype: Packed["dtype"] };
      accept(key, { buffer: reply.buffers[0], dtype: c.dtype, shape: c.shape });
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  cleanups.push(
    listen(canvas, "mousemove", (e: MouseEvent) => {
      if (!layout || !current) return;
      const rect = canvas.getBoundingClientRect();
      const cell = cellAt(layout, e.clientX - rect.left, e.clientY - rect.top);
      if (!cell) {
        tooltip.style.display = "none";
        if (hover) {
          hover = null;
          paint();
        }
        return;
      }
      const [queries, keys] = tokens();
      const v = current.data[cell.q * layout.nk + cell.k];
      tooltip.textContent = `${queries[cell.q]} → ${keys[cell.k]}\n${Number.isNaN(v) ? "masked" : v.toFixed(4)}`;
      tooltip.dataset.q = String(cell.q);
      tooltip.dataset.k = String(cell.k);
      tooltip.dataset.value = String(v);
      tooltip.style.display = "block";
      const rootRect = root.getBoundingClientRect();
      tooltip.style.left = `${e.clientX - rootRect.left + 14}px`;
      tooltip.style.top = `${e.clientY - rootRect.top + 14}px`;
      if (!hover || hover.q !== cell.q || hover.k !== cell.k) {
        hover = cell;
        paint();
      }
    }),
  );
  cleanups.push(
    listen(canvas, "mouseleave", () => {
      tooltip.style.display = "none";
      hover = null;
      paint();
    }),
  );
  cleanups.push(
    listen(root, "keydown", (e: KeyboardEvent) => {
      const [nLayers, nHeads] = meta().shapes[model.get("kind")] ?? [0, 0];
      const layer = model.get("layer");
      const head = model.get("head");
      if (e.key === "ArrowRight") update({ head: Math.min(nHeads - 1, head + 1) });
      else if (e.key === "ArrowLeft") update({ head: Math.max(-1, head - 1) });
      else if (e.key === "ArrowDown") update({ layer: Math.min(nLayers - 1, layer + 1) });
      else if (e.key === "ArrowUp") update({ layer: Math.max(0, layer - 1) });
      else return;
      e.preventDefault();
      buildControls();
    }),
  );

  const rebuild = () => {
    buildControls();
    refresh();
  };
  for (const ev of ["change:layer", "change:head", "change:kind", "change:words"]) {
    cleanups.push(onModel(model as WidgetModel<HeatmapTraits>, ev, rebuild));
  }
  cleanups.push(
    onModel(model, "change:_meta", () => {
      requester.clear();
      rebuild();
    }),
  );
  cleanups.push(onModel(model, "change:theme", paint));
  cleanups.push(onModel(model, "change:colormap", paint));
  cleanups.push(onModel(model, "change:_error", () => showError(model.get("_error"))));
  showError(model.get("_error"));
  rebuild();

  return () => {
    for (const c of cleanups) c();
    requester.dispose();
    root.remove();
  };
}

export default { render };
