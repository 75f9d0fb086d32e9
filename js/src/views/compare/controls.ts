// AttentionCompare's controls: the show, layer, head and summary menus, the words toggle, the span controls; hover
// on the maps and the grid, clicks (a grid cell opens its head, a map row selects), the arrow keys and Escape.

import { traitMenu, wordsToggle } from "../../draw/head_stats";
import type { GridLayout } from "../../draw/heads";
import { gridCellAt } from "../../draw/heads";
import { arrowKeysSelect, clickToSelect, sameHead, selectHead } from "../../draw/selection";
import * as span from "../../draw/span";
import { hoverTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select, typedInControl } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import {
  type CompareTraits,
  type Panel,
  gridTip,
  mapCellAt,
  mapTip,
  positionInA,
  summarySlice,
} from "./state";

type Model = WidgetModel<CompareTraits>;

/** (Re)build the toolbar: show, layer, head and summary menus, words, the span controls, the export buttons. */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  controls: Array<() => void>,
  picker: span.SpanSelector,
  exportControls: (list: Array<() => void>) => HTMLElement,
): void {
  resetControls(controls, bar);
  const m = model.get("_meta");
  const [nLayers, nHeads] = m.shape;
  const modes: Array<[string, string]> = [
    ["side", "A | B"],
    ["diff", "B − A"],
  ];
  bar.append(h("label", {}, "show", traitMenu(model, "show", modes, "show", controls)));
  const numbers = (n: number) =>
    Array.from({ length: n }, (_, i): [string, string] => [String(i), String(i)]);
  const layers = select(numbers(nLayers), String(model.get("layer")), "layer");
  layers.dataset.testid = "layer-select";
  const heads = select([["-1", "mean"], ...numbers(nHeads)], String(model.get("head")), "head");
  heads.dataset.testid = "head-select";
  const pick = () => selectHead(model, { layer: Number(layers.value), head: Number(heads.value) });
  controls.push(listen(layers, "change", pick), listen(heads, "change", pick));
  bar.append(h("label", {}, "layer", layers), h("label", {}, "head", heads));
  const names: Record<string, string> = {
    js: "JS divergence",
    cosine: "cosine",
    patching: "patching effect",
  };
  const opts = m.summaries.map((s): [string, string] => [s, names[s] ?? s]);
  bar.append(h("label", {}, "grid", traitMenu(model, "summary", opts, "summary", controls)));
  if (m.can_words) bar.append(wordsToggle(model, controls));
  bar.append(span.spanControls(model, picker, controls), exportControls(controls));
}

/** Keep the menus on the traits (they change from Python, the grid's clicks and the arrow keys too). */
export function syncMenus(model: Model, bar: HTMLElement): void {
  for (const [id, trait] of [
    ["layer-select", "layer"],
    ["head-select", "head"],
    ["show-select", "show"],
    ["summary-select", "summary"],
  ] as const) {
    const s = bar.querySelector<HTMLSelectElement>(`[data-testid="${id}"]`);
    if (s) s.value = String(model.get(trait));
  }
}

/** What the listeners read from the view: its canvases, what they hold, how to repaint. */
export interface Surface {
  root: HTMLElement;
  maps: HTMLCanvasElement;
  grid: HTMLCanvasElement;
  tooltip: HTMLElement;
  panels: () => Panel[];
  gridLayout: () => GridLayout | null;
  matrix: (which: Panel["which"]) => Float32Array;
  summaries: () => Float32Array;
  paint: () => void;
}

/** Hover tooltips on the maps and the grid, the grid's click and arrow keys, a map row's click selecting it (as a
 * position of A), Escape clearing the selection. */
export function listeners(model: Model, v: Surface, picker: span.SpanSelector): Array<() => void> {
  const meta = () => model.get("_meta");
  const at = (canvas: HTMLCanvasElement, e: MouseEvent) => {
    const rect = canvas.getBoundingClientRect();
    return [e.clientX - rect.left, e.clientY - rect.top] as const;
  };
  const mapHit = (e: MouseEvent) => mapCellAt(v.panels(), ...at(v.maps, e));
  const gridHit = (e: MouseEvent) => {
    const g = v.gridLayout();
    return g ? gridCellAt(g, ...at(v.grid, e)) : null;
  };
  return [
    ...hoverTooltip(v.maps, v.root, v.tooltip, {
      hitAt: mapHit,
      same: (a, b) => a.panel === b.panel && a.q === b.q && a.k === b.k,
      tip: (hit) => {
        const value = v.matrix(hit.panel.which)[hit.q * hit.panel.nk + hit.k];
        return {
          text: mapTip(meta().labels, hit.panel.which, hit.q, hit.k, value),
          data: { q: String(hit.q), k: String(hit.k), value: String(value) },
        };
      },
      changed: () => {},
    }),
    ...hoverTooltip(v.grid, v.root, v.tooltip, {
      hitAt: gridHit,
      same: sameHead,
      tip: (hit) => {
        const { data, name } = summarySlice(v.summaries(), meta(), model.get("summary"));
        const value = data[hit.layer * meta().shape[1] + hit.head];
        return {
          text: gridTip(meta(), name, hit.layer, hit.head, value),
          data: { layer: String(hit.layer), head: String(hit.head), value: String(value) },
        };
      },
      changed: () => {},
    }),
    clickToSelect(v.grid, model, gridHit, v.paint),
    arrowKeysSelect(v.root, model, () => meta().shape),
    listen(v.maps, "click", (e: MouseEvent) => {
      const hit = mapHit(e);
      if (!hit) return;
      const q = positionInA(meta().query_map, hit.panel.which, hit.q);
      if (q !== null) picker.click(q, e);
    }),
    listen(v.root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e)) return;
      if (e.key === "Escape" && (model.get("selection") ?? []).length) picker.clear();
    }),
  ];
}
