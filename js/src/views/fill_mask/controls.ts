// FillMask's controls: the [MASK], layer and head menus; the sentence box (Enter or leaving it sets `text`); a click
// on a [MASK]'s bars picks it; the attention row's tooltip.

import { type SpanModel, SpanSelector, spanControls } from "../../draw/span";
import { hoverTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import { userText } from "../../shared/text";
import { type FillMaskTraits, type FillsLayout, columnAt, menuOptions, panelAt } from "./state";

type Model = WidgetModel<FillMaskTraits>;

/** (Re)build the bar: the [MASK] menu (with several), layer, head, the logit lens box, export. */
export function buildControls(
  model: Model,
  bar: HTMLElement,
  exportControls: (list: Array<() => void>) => HTMLElement,
  list: Array<() => void>,
): void {
  resetControls(list, bar);
  const opts = menuOptions(model.get("_meta").shape);
  const menu = (name: "layer" | "head" | "mask", options: Array<[string, string]>, label: string) => {
    const s = select(options, String(model.get(name)), name);
    list.push(listen(s, "change", () => saveTraits(model, { [name]: Number(s.value) })));
    bar.append(h("label", {}, `${label} `, s));
  };
  if (opts.mask) menu("mask", opts.mask, "attention of [MASK]");
  menu("layer", opts.layer, "layer");
  menu("head", opts.head, "head");
  if (model.get("_payload").attention) {
    const picker = new SpanSelector(model as unknown as SpanModel);
    bar.append(spanControls(model as unknown as SpanModel, picker, list));
  }
  if (model.get("_payload").lens) {
    const box = h("input", { type: "checkbox", "data-testid": "lens-toggle" }) as HTMLInputElement;
    box.checked = Boolean(model.get("lens"));
    list.push(listen(box, "change", () => saveTraits(model, { lens: box.checked })));
    bar.append(h("label", {}, box, "lens"));
  }
  bar.append(exportControls(list));
}

/** The sentence box: Enter or a change sends the text to Python (when it changed). */
export function sentenceBox(model: Model, input: HTMLInputElement): Array<() => void> {
  const submit = () => {
    if (input.value !== model.get("text")) saveTraits(model, { text: input.value });
  };
  return [
    listen(input, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Enter") submit();
    }),
    listen(input, "change", submit),
  ];
}

/** A click on a [MASK]'s panel of bars makes it the [MASK] whose attention is shown. */
export function pickMask(
  model: Model,
  canvas: HTMLCanvasElement,
  layout: () => FillsLayout | null,
): () => void {
  return listen(canvas, "click", (e: MouseEvent) => {
    const l = layout();
    if (!l) return;
    const rect = canvas.getBoundingClientRect();
    const m = panelAt(
      l,
      (model.get("_payload").fills ?? []).length,
      e.clientX - rect.left,
      e.clientY - rect.top,
    );
    // that [MASK]'s row is selected again (widgets/fill_mask.py does the same in Python)
    const pos = model.get("_payload").positions[m];
    if (m >= 0 && m !== model.get("mask")) saveTraits(model, { mask: m, selection: [pos] });
  });
}

/** A click on a token of the attention row selects it as a query row (the selection's click rules: shift extends,
 * ctrl/cmd adds or removes); Escape clears the selection, which shows the [MASK]'s row again. */
export function pickRows(
  model: Model,
  canvas: HTMLCanvasElement,
  root: HTMLElement,
  columns: () => { x0: number; colW: number },
): Array<() => void> {
  const picker = new SpanSelector(model as unknown as SpanModel);
  return [
    listen(canvas, "click", (e: MouseEvent) => {
      const rect = canvas.getBoundingClientRect();
      const j = columnAt(columns(), (model.get("_payload").tokens ?? []).length, e.clientX - rect.left);
      if (j >= 0) picker.click(j, e);
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (e.key === "Escape" && (model.get("selection") ?? []).length) picker.clear();
    }),
  ];
}

/** The attention row's tooltip: the token and its attention. */
export function rowHover(
  model: Model,
  canvas: HTMLCanvasElement,
  root: HTMLElement,
  tooltip: HTMLElement,
  o: { columns: () => { x0: number; colW: number }; values: () => Float32Array },
): Array<() => void> {
  return hoverTooltip(canvas, root, tooltip, {
    hitAt: (e) => {
      const rect = canvas.getBoundingClientRect();
      const j = columnAt(o.columns(), (model.get("_payload").tokens ?? []).length, e.clientX - rect.left);
      return j < 0 ? null : j;
    },
    same: (a, b) => a === b,
    tip: (j) => {
      const v = o.values()[j];
      const tok = model.get("_payload").tokens[j];
      return { text: `token ${j}: ${userText(tok)}\nattention ${v.toFixed(3)}`, data: { key: String(j) } };
    },
    changed: () => {},
  });
}
