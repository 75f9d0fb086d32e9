// AblationWidget: a layers x heads grid of toggles, a scale slider and a mode menu that re-run the model in the
// kernel, and a panel with the watched numbers before/after and the selected head's map before/after.
// Mirrors attnwidgets/widgets/ablation.py. A change made here sets the ablation and mode traits (numbered by
// _page_seq, in one save) and comes back as one state update (_payload with that seq, _error): the page draws only
// from model state. One change is unanswered at a time: changes made meanwhile only update the page's latest state,
// saved when the update arrives, so the kernel never gets a backlog.
// This file wires the parts up: state.ts (the edits, what to show), paint.ts (grid, bars, maps), controls.ts.

import type { ColorMapName } from "../../draw/colors";
import { fitWatcher } from "../../draw/fit";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, type WidgetModel, needsKernel, onModel } from "../../shared/model";
import { userText } from "../../shared/text";
import { applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import {
  ApplyQueue,
  type GridButtons,
  type Pick1,
  buildGrid,
  buildMenus,
  editListeners,
  mapClicks,
  scaleSlider,
  toolbarParts,
} from "./controls";
import { paintColours, paintGrid, paintMaps, paintOutput, paintSelection, zoomToFit } from "./paint";
import { type AblationTraits, statusOf, toggleHead, toggleLayer } from "./state";

export type { AblationTraits, OutputRow, Payload } from "./state";

const CSS = `
.aw-ablation .aw-abl-body { display: flex; gap: 18px; align-items: flex-start; flex-wrap: wrap; }
.aw-abl-grid { display: grid; gap: 2px; align-items: center; }
.aw-abl-grid .aw-abl-colhead { text-align: center; color: var(--aw-muted); font-size: .85em; }
.aw-abl-cell { width: calc(var(--aw-font) * 2.1); height: calc(var(--aw-font) * 1.7); padding: 0;
  border: 1px solid var(--aw-abl-line); border-radius: 3px; background: var(--aw-abl-on); color: #fff;
  font: inherit; font-size: .8em; font-weight: 600; cursor: pointer; }
.aw-abl-cell:disabled { cursor: not-allowed; }
.aw-abl-kv { text-align: center; color: var(--aw-muted); font-size: .8em; border-bottom: 2px solid var(--aw-muted);
  white-space: nowrap; }
.aw-abl-cell.aw-selected { outline: 2px solid var(--aw-accent); outline-offset: 1px; }
.aw-ablation select, .aw-ablation button, .aw-ablation input { font: inherit; }
.aw-abl-layer { font: inherit; font-size: .85em; padding: 1px 6px; min-width: 8.5ch; text-align: left; border: 1px solid var(--aw-abl-line);
  border-radius: 3px; background: var(--aw-bg); color: var(--aw-fg); cursor: pointer; white-space: nowrap; }
.aw-abl-layer[aria-pressed=true] { background: var(--aw-abl-off); color: #fff; }
.aw-abl-select { display: flex; gap: 8px; align-items: center; margin-top: 8px; flex-wrap: wrap; }
.aw-abl-select input[type=range] { width: 160px; }
.aw-abl-hint { color: var(--aw-muted); font-size: .85em; margin-top: 4px; max-width: 420px; }
.aw-abl-panel { min-width: 320px; }
.aw-abl-panel h4 { margin: 0 0 4px; font-size: 1em; }
.aw-abl-group { margin: 6px 0 2px; color: var(--aw-muted); font-size: .9em; max-width: 520px; overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }
.aw-abl-row { display: grid; grid-template-columns: minmax(60px, max-content) 160px 160px max-content; gap: 8px;
  align-items: center; }
.aw-abl-axes { font-size: .8em; margin-top: 4px; }
.aw-abl-delta { font-size: 1.3em; font-weight: 700; margin-left: .4em; font-variant-numeric: tabular-nums; }
.aw-abl-dbar { top: 15%; height: 70%; }
.aw-abl-dbar.aw-abl-up { background: #1a7f37; } .aw-abl-dbar.aw-abl-down { background: #cf222e; }
.aw-abl-dbar.aw-muted { background: var(--aw-muted); }
.aw-abl-track { position: relative; height: calc(var(--aw-font) * 1.4); background: var(--aw-abl-track);
  border-radius: 2px; }
.aw-abl-bar { position: absolute; height: 45%; }
.aw-abl-bar.aw-before { top: 5%; background: var(--aw-abl-before); }
.aw-abl-bar.aw-after { bottom: 5%; background: var(--aw-abl-after); }
.aw-abl-zero { position: absolute; top: 0; bottom: 0; width: 1px; background: var(--aw-muted); }
.aw-abl-nums { font-variant-numeric: tabular-nums; white-space: nowrap; }
.aw-abl-up { color: #1a7f37; } .aw-abl-down { color: #cf222e; }
.aw-abl-key { display: inline-block; width: 10px; height: 10px; margin: 0 3px 0 8px; vertical-align: -1px; }
.aw-abl-maps { display: flex; gap: 12px; flex-wrap: wrap; margin-top: 10px; }
.aw-abl-maps figure { margin: 0; }
.aw-abl-maps figcaption { color: var(--aw-muted); font-size: .9em; }
.aw-abl-status[data-state=running] { color: var(--aw-accent); }
.aw-ablation.aw-fit .aw-abl-body { gap: 14px; }
.aw-ablation.aw-fit .aw-abl-cell { width: calc(var(--aw-font) * 1.7); height: calc(var(--aw-font) * 1.4);
  font-size: .8em; }
.aw-ablation.aw-fit .aw-abl-layer { min-width: 0; font-size: .8em; padding: 0 4px; }
.aw-ablation.aw-fit .aw-abl-colhead { font-size: .8em; }
.aw-ablation.aw-fit .aw-abl-hint { max-width: 420px; font-size: .8em; }
.aw-ablation.aw-fit .aw-abl-select input[type=range] { width: 110px; }
.aw-ablation.aw-fit .aw-abl-panel { min-width: 0; }
.aw-ablation.aw-fit .aw-abl-row { grid-template-columns: minmax(50px, max-content) 120px 120px max-content; }
`;

/** The page's parts: toolbar, grid and slider on the left, the watched numbers and the maps on the right. */
function layoutParts(
  model: WidgetModel<AblationTraits>,
  root: HTMLElement,
  head: HTMLElement[],
  bar: HTMLElement,
) {
  const p = {
    grid: h("div", { className: "aw-abl-grid", "data-testid": "grid" }),
    ...scaleSlider(),
    selectedText: h("span", { "data-testid": "selected" }),
    status: h("span", {
      className: "aw-abl-status aw-muted",
      "data-testid": "status",
      "aria-live": "polite",
    }),
    output: h("div", { "data-testid": "output" }),
    watchText: h("h4"),
    itemSel: h("span"),
    maps: [h("canvas", { "data-testid": "map-before" }), h("canvas", { "data-testid": "map-after" })] as [
      HTMLCanvasElement,
      HTMLCanvasElement,
    ],
    mapTitle: h("span"),
    stackBox: h("span"),
    ...toolbarParts(model.get("mode")),
  };
  bar.append(h("label", {}, "disable by", p.modeSel), p.stackBox, p.reset, p.status);
  const legend = h(
    "div",
    { className: "aw-muted" },
    h("span", { className: "aw-abl-key", style: "background: var(--aw-abl-before)" }),
    "before",
    h("span", { className: "aw-abl-key", style: "background: var(--aw-abl-after)" }),
    "after",
  );
  const hint =
    "Click a head to disable it or enable it again; a layer button disables the whole row. × zero · U uniform · M mean · .50 scaled.";
  const left = h(
    "div",
    {},
    p.grid,
    h("div", { className: "aw-abl-select" }, p.selectedText, h("label", {}, "scale", p.slider), p.text),
    h("div", { className: "aw-abl-hint", text: hint }),
  );
  const right = h(
    "div",
    { className: "aw-abl-panel" },
    p.watchText,
    legend,
    p.output,
    h("div", { className: "aw-abl-maps" }, p.mapTitle, p.itemSel),
    h(
      "div",
      { className: "aw-abl-maps" },
      h("figure", {}, p.maps[0], h("figcaption", { text: "before" })),
      h("figure", {}, p.maps[1], h("figcaption", { text: "after ablation" })),
    ),
  );
  root.append(...head, h("div", { className: "aw-abl-body" }, left, right));
  return p;
}

function render({ model, el }: RenderProps<AblationTraits>): () => void {
  const shell = widgetShell(model, el, "aw-ablation", CSS);
  const { root, title, bar, errorBox, cleanups } = shell;
  errorBox.dataset.testid = "error";
  const p = layoutParts(model, root, [title, bar, errorBox], bar);
  const { status, output } = p;
  const queue = new ApplyQueue(
    model,
    () => drawGrid(),
    () => setStatus(),
  );

  const payload = () => model.get("_payload");
  const stackShape = (): [number, number] => payload().stacks?.[model.get("kind")] ?? [0, 0];

  function setStatus(): void {
    const running = !queue.idle() || model.get("_running");
    const s = statusOf(running, model.get("_error"), payload()?.seconds, queue.roundtrip);
    status.dataset.state = s.state;
    status.dataset.roundtrip = String(queue.roundtrip);
    output.style.opacity = s.state === "error" ? "0.45" : "";
    status.textContent = s.text;
  }

  const select1: Pick1 = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k as keyof AblationTraits, v as never);
    model.save_changes();
    drawGrid();
  };

  const barListeners = controlGroup(cleanups);
  let barKey = "";
  function buildBar(): void {
    const key = JSON.stringify([payload().stacks, payload().items, model.get("kind"), model.get("item")]);
    if (key === barKey) return; // the menus are as they are: rebuilding them would take a menu away while in use
    barKey = key;
    buildMenus(model, p.stackBox, p.itemSel, barListeners, select1);
  }

  // The grid is rebuilt only when its shape changes; cells are restyled in place.
  let gridShape = "";
  let buttons: GridButtons = { layers: [], cells: [] };
  const gridListeners = controlGroup(cleanups);
  function ensureGrid(): void {
    const [nLayers, nHeads] = stackShape();
    const shape = `${model.get("kind")}/${nLayers}x${nHeads}`;
    if (gridShape === shape) return;
    gridShape = shape;
    const kvHeads = payload().kv_heads?.[model.get("kind")] ?? 0;
    buttons = buildGrid(
      p.grid,
      { nLayers, nHeads, kvHeads },
      gridListeners,
      (l) => queue.change(toggleLayer(queue.want, model.get("kind"), l, queue.mode), 0),
      (l, hd) => {
        select1({ layer: l, head: hd });
        queue.change(toggleHead(queue.want, model.get("kind"), l, hd, queue.mode), 0);
      },
    );
  }

  function drawGrid(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    paintColours(root, t);
    ensureGrid();
    const at = { stack: model.get("kind"), layer: model.get("layer"), head: model.get("head") };
    paintGrid(buttons.layers, buttons.cells, queue.want, at.stack, queue.mode, at);
    p.modeSel.value = queue.mode;
    p.reset.disabled = queue.want.edits.length === 0;
    paintSelection(p, queue.want, at);
    setStatus();
    // Saved without a kernel: the re-run is Python's, so what would ask for one is shown disabled (and says why).
    needsKernel(model, p.modeSel, p.reset, p.slider, ...buttons.layers, ...buttons.cells.flat());
  }

  function drawOutput(): void {
    const out = payload();
    title.textContent = `${userText(out.title ?? "")} · ablation`;
    p.watchText.textContent = `watching: ${userText(out.watch ?? "")}`;
    paintOutput(output, out);
  }

  function drawMaps(): void {
    const hm = payload().map;
    if (!hm || !hm.before) return;
    const t = theme(model.get("theme"));
    const colormap = (model.get("colormap") || t.colormap) as ColorMapName;
    const where = { stack: model.get("kind"), layer: model.get("layer"), head: model.get("head") };
    const span = { selection: model.get("selection") ?? [], combine: model.get("combine") || "mean" };
    p.mapTitle.textContent = paintMaps(p.maps, hm, t, colormap, fit.on(), where, span);
  }

  cleanups.push(...editListeners(model, p, queue));
  const on = (ev: string, fn: () => void) => cleanups.push(onModel(model, ev, fn));
  on("change:ablation", () => queue.takeAblation());
  on("change:mode", () => queue.takeMode());
  on("change:layer", drawGrid);
  on("change:head", drawGrid);
  on("change:kind", () => {
    buildBar();
    drawGrid();
  });
  on("change:item", buildBar);
  on("change:_payload", () => {
    buildBar();
    queue.answered();
    drawGrid();
    drawOutput();
    drawMaps();
    setStatus();
  });
  on("change:_running", setStatus);
  on("change:_error", setStatus); // the shell's error box shows it
  on("change:theme", () => {
    drawGrid();
    drawMaps();
  });
  on("change:colormap", drawMaps);
  on("change:selection", drawMaps);
  on("change:combine", drawMaps);
  cleanups.push(...mapClicks(model, p.maps, root));

  // Fit to screen: the whole explorer zoomed to lie inside the box (paint.ts zoomToFit), once per frame.
  let zoomFrame = 0;
  const refit = () => {
    cancelAnimationFrame(zoomFrame);
    zoomFrame = requestAnimationFrame(() =>
      zoomToFit(root, fit.box(), theme(model.get("theme")).name === "lecture"),
    );
  };
  const fit = fitWatcher(model, el, root, refit);
  cleanups.push(fit.cleanup, () => cancelAnimationFrame(zoomFrame));
  on("change:_payload", refit);
  on("change:theme", refit);

  buildBar();
  drawGrid();
  drawOutput();
  drawMaps();
  refit();

  return () => {
    queue.close();
    shell.close();
  };
}

export default { render };
