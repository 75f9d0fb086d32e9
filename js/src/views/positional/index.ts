// PositionalExplorer: a positional encoding as a heatmap and the position-to-position matrix beside it.
// Mirrors attnwidgets/widgets/positional.py. Python computes both panels (numpy, teaching kit) and sends them as
// float32 buffers in `_payload.panels`; the page picks the encoding and moves the sliders, which set the Python traits.
// This file wires the parts up: state.ts (what to show), paint.ts (the panels), controls.ts (menus, sliders, tooltip).

import { fitWatcher } from "../../draw/fit";
import { captionAndRow } from "../../draw/teaching";
import { hideTooltip, tooltipBox } from "../../draw/tooltip";
import { controlGroup } from "../../shared/dom";
import { type RenderProps, onModel, saveTraits } from "../../shared/model";
import { applyTheme, theme } from "../../shared/theme";
import { widgetShell } from "../../shared/widget_shell";
import { buildControls, panelHover } from "./controls";
import { type Drawn, paintPanel, panelBox } from "./paint";
import { type Editable, type PositionalTraits, fittedSide, noteWidth, positionalTitle } from "./state";

export type { PositionalPanel, PositionalTraits } from "./state";

function render({ model, el }: RenderProps<PositionalTraits>): () => void {
  const shell = widgetShell(model, el, "aw-positional");
  const { root, title, bar, errorBox, cleanups } = shell;
  const { caption, row } = captionAndRow(18);
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, caption, row, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const boxes = [0, 1].map(panelBox);
  row.append(...boxes.map((b) => b.box));
  let drawn: Drawn[] = [];

  const update = (changes: Partial<Editable>) => saveTraits(model, changes);
  const controls = controlGroup(cleanups);
  const rebuild = () => buildControls(model, bar, shell.exportControls, controls, update);

  /** Fitted: the panels' side that puts both in the box with their texts; null when not fitting. */
  function side(big: boolean): number | null {
    const room = fit.room(row);
    row.style.flexWrap = room ? "nowrap" : "wrap";
    if (!room) return null;
    const chrome = Math.max(
      ...boxes.map((b) => b.box.getBoundingClientRect().height - b.canvas.getBoundingClientRect().height),
    );
    return fittedSide(big, room, chrome, Number.parseFloat(row.style.gap) || 0);
  }

  function paint(): void {
    hideTooltip(tooltip); // what it said was about the old picture
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const meta = model.get("_meta");
    caption.textContent = meta.caption ?? "";
    const encoding = model.get("encoding");
    title.textContent = positionalTitle(encoding, meta.table_name, model.get("length"));
    root.dataset.encoding = encoding;
    const s = side(t.name === "lecture");
    for (const b of boxes) b.note.style.maxWidth = `${noteWidth(s)}px`;
    const panels = model.get("_payload")?.panels ?? [];
    const o = { side: s, colormap: model.get("colormap"), encoding };
    drawn = panels.slice(0, 2).map((p, i) => paintPanel(boxes[i], p, t, o));
  }

  cleanups.push(...panelHover(boxes, () => drawn, tooltip, root));
  for (const ev of ["encoding", "_meta", "n_heads", "head", "causal", "length", "d_model", "similarity"])
    cleanups.push(onModel(model, `change:${ev}`, rebuild));
  for (const ev of ["_payload", "colormap", "theme"]) cleanups.push(onModel(model, `change:${ev}`, paint));
  rebuild();
  paint();

  return shell.close;
}

export default { render };
