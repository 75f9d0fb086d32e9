// QKStepThrough: for one head and one query token, each step of attention in its own panel (a rotary model first
// shows q and k before the rotation, q·k before it and the angle of each pair at each position): q and the keys as colour
// strips, q ⊙ k, q·k, the scaling by 1/√d, the position bias (only for models that add one: T5's relative-position
// bias with each key's bucket, an ALiBi-style linear bias), the softmax, and the weighted sum of the values.
// Mirrors attnwidgets/widgets/qk.py. Only the (layer, head) on screen crosses from Python; others are fetched on
// demand and kept in the page. Every number comes from the model (captured in attnwidgets/runner/qk.py).
// This file wires the parts up: state.ts (what to draw), paint.ts (the canvases), controls.ts (menus, keys, hover).

import type { DivergingName } from "../../draw/diverging";
import { fitWatcher } from "../../draw/fit";
import { type SpanModel, SpanSelector } from "../../draw/span";
import { hideTooltip, tooltipBox } from "../../draw/tooltip";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, type WidgetModel, onModel, saveTraits } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import {
  type PanelHooks,
  type QKChange,
  arrowKeys,
  buildControls,
  followSelection,
  panelListeners,
  withSelection,
} from "./controls";
import { type Scene, fitPanels, paintPanels } from "./paint";
import {
  type Geometry,
  type HeadData,
  type QKTraits,
  type QKView,
  captionText,
  headData,
  headRequest,
  keyPos,
  panels,
  queryIndex,
  queryRow,
  replyArrays,
  rowAtY,
  rowLabel,
  tipLines,
  titleText,
  viewKey,
  windowRows,
} from "./state";

export type { QKTraits } from "./state";

const viewOf = (model: WidgetModel<QKTraits>): QKView => ({
  layer: model.get("layer"),
  head: model.get("head"),
  query: model.get("query"),
  window: model.get("window"),
});

/** The panels' row and their canvases, rebuilt when the capture's bias, scaling or head size change. */
function panelRow(model: WidgetModel<QKTraits>) {
  const row = h("div", { className: "aw-qk-panels" });
  const canvases: Record<string, HTMLCanvasElement> = {};
  let shown = ""; // what the panels were built for: bias, scaling, head size
  /** (Re)build the panels: the "+ bias" panel appears only when the capture has a bias; true if rebuilt. */
  function build(): boolean {
    const m = model.get("_meta");
    const want = `${Boolean(m.bias)}/${m.scaling}/${m.head_dim}/${m.rotary_dim}`;
    if (shown === want) return false;
    shown = want;
    row.replaceChildren();
    for (const key of Object.keys(canvases)) delete canvases[key];
    for (const { id, title: head, help } of panels(Boolean(m.bias), m.scaling, m.head_dim, Boolean(m.rope))) {
      const canvas = h("canvas", { "data-testid": `qk-${id}` });
      canvases[id] = canvas;
      row.append(
        h(
          "div",
          { className: "aw-qk-panel", title: help },
          h("div", { className: "aw-qk-head", text: head, "data-export-text": true }),
          canvas,
        ),
      );
    }
    return true;
  }
  build();
  return { row, canvases, build };
}

function render({ model, el }: RenderProps<QKTraits>): () => void {
  const shell = widgetShell(model, el, "aw-qk", QK_CSS);
  const { root, title, bar, errorBox, cleanups, showError } = shell;
  const requester = new Requester(model);
  const caption = h("div", { className: "aw-muted aw-qk-caption", "data-export-text": true });
  const panes = panelRow(model);
  const { row, canvases } = panes;
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, caption, row, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let data: HeadData | null = null;
  let geo: Geometry | null = null;
  let hoverRow = -1;
  const meta = () => model.get("_meta");
  const controls = controlGroup(cleanups);
  const rebuildControls = () => buildControls(model, root, bar, controls, update);

  const picker = new SpanSelector(model as unknown as SpanModel);
  function update(changes: QKChange): void {
    saveTraits(model, withSelection(changes, model.get("selection") ?? []));
    rebuildControls();
    refresh();
  }

  function paint(): void {
    if (!data) return;
    const hd = data;
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const m = meta();
    const v = viewOf(model);
    const i = queryIndex(hd, v.query);
    const r = queryRow(hd, i);
    const nWin = windowRows(hd, v.window);
    const labels = Array.from({ length: hd.m }, (_, j) => rowLabel(m.key_tokens, hd, j, nWin));
    const { g, font } = fitPanels(row, canvases, fit.room(row), { t, hd, labels, r });
    geo = g;
    const scene: Scene = {
      t,
      map: (model.get("colormap") || (t.name === "lecture" ? "puor" : "rdbu")) as DivergingName,
      hd,
      r,
      i,
      g,
      font,
      labels,
      nWin,
      hoverRow,
      selected: new Set(model.get("selection") ?? []),
      selfAttention: m.stack !== "cross",
      queryToken: m.tokens[i] ?? "",
    };
    const best = paintPanels(scene, canvases, m.scaling);
    Object.assign(canvases.softmax.dataset, {
      top: String(g.top),
      rh: String(g.rh),
      view: `${v.layer}/${v.head}/${i}`,
      keys: hd.pos ? hd.pos.join(",") : "",
      argmax: String(best),
      selection: (model.get("selection") ?? []).join(","),
      weights: Array.from(r.weights, (x) => x.toFixed(6)).join(","),
    });
    title.textContent = titleText(m, v);
    caption.textContent = captionText(m, v, hd, i, r, best, model.get("selection") ?? []);
  }

  function accept(hd: HeadData): void {
    data = hd;
    paint();
  }

  async function refresh(): Promise<void> {
    const key = viewKey(meta(), viewOf(model));
    if (data && data.key === key) {
      paint();
      return;
    }
    const initial = model.get("_payload");
    if (initial && "key" in initial && initial.key === key) {
      accept(headData(key, initial.arrays));
      return;
    }
    try {
      const reply = await requester.get(key, headRequest(meta(), viewOf(model)));
      if (viewKey(meta(), viewOf(model)) !== key) return;
      const specs = (reply.content as { arrays: Parameters<typeof replyArrays>[0] }).arrays;
      accept(headData(key, replyArrays(specs, reply.buffers)));
      showError(model.get("_error"));
    } catch (e) {
      showError(String((e as Error).message ?? e));
    }
  }

  function rowAt(canvas: HTMLCanvasElement, e: MouseEvent): { j: number; x: number } | null {
    if (!geo || !data) return null;
    const rect = canvas.getBoundingClientRect();
    const j = rowAtY(geo, data.m, e.clientY - rect.top);
    return j < 0 ? null : { j, x: e.clientX - rect.left };
  }

  /** Hover and click listeners on every panel's canvas (again after the panels are rebuilt). */
  function listenPanels(): void {
    const ids = panels(Boolean(meta().bias), undefined, undefined, Boolean(meta().rope)).map((p) => p.id);
    const hooks: PanelHooks = {
      rowAt,
      tip: (id, hit) =>
        data && geo ? tipLines(meta(), data, geo, model.get("query"), id, hit.j, hit.x).join("\n") : "",
      hoverRow: () => hoverRow,
      setHover: (j) => {
        hoverRow = j;
        paint();
      },
      // A click on a token in panel 1 selects it (self-attention: keys are the query tokens); the query follows.
      pickQuery: (hit, mods) => {
        const p = data ? keyPos(data, hit.j) : -1;
        if (meta().stack !== "cross" && p >= 0 && p < meta().tokens.length) picker.click(p, mods);
      },
    };
    cleanups.push(...panelListeners(canvases, ids, tooltip, root, hooks));
  }
  listenPanels();
  cleanups.push(arrowKeys(model, root, update));
  cleanups.push(...followSelection(model, root, picker, update, paint));

  const rebuild = () => {
    hideTooltip(tooltip); // it described the old head or query
    rebuildControls();
    refresh();
  };
  for (const ev of ["change:layer", "change:head", "change:query", "change:window"])
    cleanups.push(onModel(model, ev, rebuild));
  cleanups.push(
    onModel(model, "change:_meta", () => {
      requester.clear();
      data = null;
      if (panes.build()) listenPanels();
      rebuild();
    }),
  );
  cleanups.push(onModel(model, "change:theme", paint));
  cleanups.push(onModel(model, "change:colormap", paint));
  rebuild();

  return () => {
    shell.close();
    requester.dispose();
  };
}

/** The QK view's own styles (added to the shared ones in its root by `widgetShell`). */
const QK_CSS = `
.aw-qk-panels { display: flex; gap: 8px; align-items: flex-start; overflow: auto; max-width: 100%; max-height: 75vh; }
.aw-qk-panels { align-items: stretch; }
/* every panel as tall as the tallest, its canvas at the bottom: the key rows line up even when a title wraps */
.aw-qk-panel { border: 1px solid var(--aw-muted); border-radius: 4px; padding: 4px; flex: none;
  display: flex; flex-direction: column; justify-content: flex-end; }
.aw-qk-head { font-weight: 600; margin-bottom: 4px; white-space: nowrap; }
.aw-qk-caption { margin: 2px 0 6px; }
.aw-window-nav { display: inline-flex; gap: 6px; align-items: center; font-variant-numeric: tabular-nums; }
.aw-fit .aw-qk-panels { gap: 6px; }
.aw-fit .aw-qk-panel { padding: 2px; }
.aw-fit .aw-qk-head { white-space: nowrap; text-overflow: ellipsis; font-size: calc(var(--aw-font) * 0.8);
  margin-bottom: 2px; overflow: hidden; } /* fitted, a title keeps one line (wrapped to four over a small head's
  narrow strips, the titles pushed the key rows off a 720p screen); a cut title ends in "…", its panel's tooltip
  says what it is */
.aw-fit .aw-qk-caption { margin: 0 0 2px; }
`;

export default { render };
