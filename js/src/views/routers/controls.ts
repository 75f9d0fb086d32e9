// RouterView's controls: the "weighted" box (the bars count gate weight instead of assignments), the selection's
// clear button, the export buttons; and the canvas's clicks and keys (a cell selects its token by the heatmap's
// rules and shows its layer, a layer's number shows that layer, Escape clears).

import { type SpanModel, SpanSelector } from "../../draw/span";
import { h, listen, typedInControl } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import type { WidgetShell } from "../../shared/widget_shell";
import type { RouterHit, RouterTraits } from "./state";

/** The bar: the weighted box, the clear button and the export buttons; their listeners go to `controls`. */
export function buildControls(
  model: WidgetModel<RouterTraits>,
  shell: WidgetShell,
  picker: SpanSelector,
  controls: Array<() => void>,
): void {
  shell.bar.replaceChildren();
  const box = h("input", { type: "checkbox", "data-testid": "weighted", "aria-label": "weight by gate" });
  box.checked = model.get("weighted");
  const clear = h("button", {
    type: "button",
    text: "clear",
    "data-testid": "span-clear",
    title: "clear the selected tokens (Escape)",
    disabled: !(model.get("selection") ?? []).length,
  });
  controls.push(
    listen(box, "change", () => saveTraits(model, { weighted: box.checked })),
    listen(clear, "click", () => picker.clear()),
  );
  const tip =
    "selected tokens: click a cell, shift-click to extend, ctrl/cmd-click to add or remove, Escape clears";
  shell.bar.append(
    h("label", { title: "the bars count each expert's gate weight, not its assignments" }, box, "weighted"),
    h("label", { className: "aw-span", title: tip }, "selection", clear),
    shell.exportControls(controls),
  );
}

/** The span selector of the view: the heatmap's click rules on `selection` (RouterView has no `combine`). */
export function spanPicker(model: WidgetModel<RouterTraits>): SpanSelector {
  return new SpanSelector(model as unknown as SpanModel);
}

/** Clicks on the canvas: a cell selects its token (span rules) and shows its layer; a layer's number shows that
 * layer; a token's label selects the token. */
export function clickRouters(
  canvas: HTMLCanvasElement,
  model: WidgetModel<RouterTraits>,
  picker: SpanSelector,
  hitAt: (x: number, y: number) => RouterHit,
): () => void {
  return listen(canvas, "click", (e: MouseEvent) => {
    const r = canvas.getBoundingClientRect();
    const hit = hitAt(e.clientX - r.left, e.clientY - r.top);
    if (!hit || hit.what === "bar") return;
    if (hit.what === "cell" || hit.what === "layer") {
      const layer = model.get("_meta").layers[hit.li];
      if (layer !== model.get("layer")) model.set("layer", layer);
    }
    if (hit.what === "cell" || hit.what === "token") picker.click(hit.t, e);
    else model.save_changes();
  });
}

/** Escape clears the selection, Shift+ArrowDown / Shift+ArrowUp grow or shrink it (not while typing in a control). */
export function routerKeys(root: HTMLElement, picker: SpanSelector, nTokens: () => number): () => void {
  return listen(root, "keydown", (e: KeyboardEvent) => {
    if (typedInControl(e)) return;
    if (picker.keydown(e, nTokens())) {
      e.preventDefault();
      e.stopPropagation();
    }
  });
}
