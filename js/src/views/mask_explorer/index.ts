// MaskExplorer: an attention mask as a query x key grid, and how MQA/GQA share key/value heads.
// Mirrors attnwidgets/widgets/mask_explorer.py. Python builds the mask (numpy, teaching kit) and sends it as a uint8
// buffer in `_payload.mask`; the page's menus, sliders and boxes set the Python traits, and Python sends the new mask back.
// This file wires the parts up: state.ts (what to show), paint.ts (mask and KV panel), controls.ts (menus, tooltip).

import { fitWatcher } from "../../draw/fit";
import { type PanelGeometry, captionAndRow } from "../../draw/teaching";
import { hideTooltip, tooltipBox } from "../../draw/tooltip";
import { decode } from "../../shared/buffers";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, onModel, saveTraits } from "../../shared/model";
import { applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import { buildControls, maskHover } from "./controls";
import { type MaskDom, paintKv, paintMask } from "./paint";
import type { Editable, MaskExplorerTraits } from "./state";

export type { MaskExplorerTraits } from "./state";

/** The mask (with its counts) beside the KV panel (its menus, drawing, text and cache bars). */
function maskDom(title: HTMLElement): { dom: MaskDom; kvBar: HTMLElement } {
  const { caption, row } = captionAndRow(24);
  const canvas = h("canvas", { "data-testid": "mask-canvas" });
  const stats = h("div", { "data-testid": "mask-stats" });
  const kvBar = h("div", { className: "aw-bar" });
  const kvCanvas = h("canvas", { "data-testid": "kv-canvas" });
  const kvText = h("div", { "data-testid": "kv-text" });
  const cacheRows = h("div", { "data-testid": "kv-cache" });
  const heading = h("div", { className: "aw-title", text: "Sharing key/value heads: MHA, GQA, MQA" });
  const right = h("div", {}, heading, kvBar, kvCanvas, kvText, cacheRows);
  row.append(h("div", {}, canvas, stats), right);
  return { dom: { title, caption, row, canvas, stats, right, kvCanvas, kvText, cacheRows }, kvBar };
}

function render({ model, el }: RenderProps<MaskExplorerTraits>): () => void {
  const shell = widgetShell(model, el, "aw-mask-explorer", MASK_CSS);
  const { root, title, bar, errorBox, cleanups } = shell;
  const { dom, kvBar } = maskDom(title);
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, dom.caption, dom.row, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);

  let data: Float32Array = new Float32Array(0);
  let geom: PanelGeometry | null = null;
  const update = (changes: Partial<Editable>) => saveTraits(model, changes);
  const controls = controlGroup(cleanups);
  const rebuild = () =>
    buildControls(model, { bar, kvBar, exportControls: shell.exportControls }, controls, update);

  function paint(): void {
    hideTooltip(tooltip); // what it said was about the old picture
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    paintKv(dom, model, t, fit.on()); // first: the mask takes the width the KV panel leaves
    const m = decode(model.get("_payload").mask);
    data = m.data;
    const view = {
      mask: model.get("mask"),
      window: model.get("window"),
      global_tokens: model.get("global_tokens"),
      _meta: model.get("_meta"),
    };
    geom = paintMask(dom, view, t, data, m.shape[0], fit.room(dom.row));
    root.dataset.mask = view.mask;
  }

  cleanups.push(...maskHover(model, dom.canvas, tooltip, root, () => ({ geom, data })));
  for (const ev of Object.keys({
    mask: 0,
    length: 0,
    window: 0,
    causal: 0,
    global_tokens: 0,
    padding: 0,
    n_heads: 0,
    n_kv_heads: 0,
    seq_len: 0,
  } satisfies Record<keyof Editable, 0>))
    cleanups.push(onModel(model, `change:${ev}`, rebuild));
  for (const ev of ["_payload", "_meta", "theme"]) cleanups.push(onModel(model, `change:${ev}`, paint));
  rebuild();
  paint();

  return shell.close;
}

/** Fitted (draw/fit.ts): the KV panel's text a step smaller, so the panel is not taller than the mask. */
const MASK_CSS = `
.aw-fit [data-testid=kv-text], .aw-fit [data-testid=kv-cache] { font-size: calc(var(--aw-font) * 0.8); }
.aw-fit .aw-title { font-size: calc(var(--aw-font) * 1); }
`;

export default { render };
