// MaskExplorer's controls: the mask menu, the length / padding / window sliders, the causal box and the global tokens
// in the bar; the query-head, kv-head and cached-token menus over the KV panel; the mask's tooltip.

import { type PanelGeometry, panelCellAt, slider } from "../../draw/teaching";
import { hideTooltip, showTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select } from "../../shared/dom";
import type { WidgetModel } from "../../shared/model";
import {
  type Editable,
  HEADS,
  MASKS,
  type MaskExplorerTraits,
  SEQ,
  divisors,
  hasWindow,
  lengthChange,
  maskTip,
  padStart,
  parsePositions,
} from "./state";

type Model = WidgetModel<MaskExplorerTraits>;
type Update = (changes: Partial<Editable>) => void;

/** A numeric menu bound to `update`; its listener goes to `list`. */
function numberMenu(
  options: Array<[string, string]>,
  value: number,
  label: string,
  testid: string,
  change: (v: number) => void,
  list: Array<() => void>,
): HTMLSelectElement {
  const menu = select(options, String(value), label);
  menu.dataset.testid = testid;
  list.push(listen(menu, "change", () => change(Number(menu.value))));
  return menu;
}

/** The bar's controls for the mask (those of its kind only); listeners go to `list`. */
export function maskControls(model: Model, update: Update, list: Array<() => void>): HTMLElement[] {
  const kind = model.get("mask");
  const n = model.get("length");
  const maskSel = select(MASKS, kind, "mask");
  maskSel.dataset.testid = "mask-select";
  list.push(listen(maskSel, "change", () => update({ mask: maskSel.value })));
  const out: HTMLElement[] = [h("label", {}, "mask", maskSel)];
  const length = { min: 2, max: Math.max(64, n), value: n, testid: "length-slider" };
  out.push(
    slider("length", length, (v) => update(lengthChange(v, model.get("window"), model.get("padding"))), list)
      .wrap,
  );
  const padding = {
    min: 0,
    max: n - 1,
    value: Math.min(model.get("padding"), n - 1),
    testid: "padding-slider",
  };
  out.push(slider("padding", padding, (v) => update({ padding: v }), list).wrap);
  if (hasWindow(kind)) {
    const window = { min: 1, max: n, value: Math.min(model.get("window"), n), testid: "window-slider" };
    out.push(slider("window w", window, (v) => update({ window: v }), list).wrap);
    const box = h("input", { type: "checkbox", "aria-label": "causal", "data-testid": "causal-box" });
    box.checked = model.get("causal");
    list.push(listen(box, "change", () => update({ causal: box.checked })));
    out.push(h("label", {}, box, "causal"));
  }
  if (kind === "global_local") {
    const input = h("input", {
      type: "text",
      size: 10,
      "aria-label": "global tokens",
      "data-testid": "global-input",
    });
    input.value = model.get("global_tokens").join(", ");
    list.push(listen(input, "change", () => update({ global_tokens: parsePositions(input.value, n) })));
    out.push(h("label", {}, "global tokens", input));
  }
  return out;
}

/** The KV panel's menus: query heads (the kv heads reset to 1), kv heads (the divisors), tokens cached. */
export function kvControls(model: Model, update: Update, list: Array<() => void>): HTMLElement[] {
  const nh = model.get("n_heads");
  const opts = (values: number[], text = (v: number) => String(v)) =>
    values.map((v): [string, string] => [String(v), text(v)]);
  const heads = numberMenu(
    opts(HEADS),
    nh,
    "query heads",
    "heads-select",
    (v) => update({ n_heads: v, n_kv_heads: 1 }),
    list,
  );
  const kv = numberMenu(
    opts(divisors(nh)),
    model.get("n_kv_heads"),
    "key/value heads",
    "kv-select",
    (v) => update({ n_kv_heads: v }),
    list,
  );
  const seq = numberMenu(
    opts(SEQ, (v) => v.toLocaleString("en")),
    model.get("seq_len"),
    "tokens cached",
    "seq-select",
    (v) => update({ seq_len: v }),
    list,
  );
  return [
    h("label", {}, "query heads", heads),
    h("label", {}, "kv heads", kv),
    h("label", {}, "tokens", seq),
  ];
}

/** (Re)build the bar and the KV panel's menus. */
export function buildControls(
  model: Model,
  bars: { bar: HTMLElement; kvBar: HTMLElement; exportControls(list: Array<() => void>): HTMLElement },
  list: Array<() => void>,
  update: Update,
): void {
  resetControls(list, bars.bar);
  bars.bar.append(...maskControls(model, update, list), bars.exportControls(list));
  bars.kvBar.replaceChildren(...kvControls(model, update, list));
}

/** The mask's tooltip: whether the query sees the key, how many keys it sees, what [PAD] means. */
export function maskHover(
  model: Model,
  canvas: HTMLCanvasElement,
  tooltip: HTMLElement,
  root: HTMLElement,
  at: () => { geom: PanelGeometry | null; data: ArrayLike<number> },
): Array<() => void> {
  return [
    listen(canvas, "mousemove", (e: MouseEvent) => {
      const { geom, data } = at();
      if (!geom) return;
      const rect = canvas.getBoundingClientRect();
      const cell = panelCellAt(geom, e.clientX - rect.left, e.clientY - rect.top);
      if (!cell) {
        hideTooltip(tooltip);
        return;
      }
      const n = geom.cols;
      const padFrom = padStart(n, model.get("_meta").padding);
      const ok = data[cell.row * n + cell.col] > 0.5;
      showTooltip(tooltip, root, e, maskTip(data, n, cell.row, cell.col, padFrom), { allowed: String(ok) });
    }),
    listen(canvas, "mouseleave", () => {
      hideTooltip(tooltip);
    }),
  ];
}
