// EntropyBars: per-head attention entropy as bars grouped by layer, with the uniform baseline as a dashed line.
// Mirrors attnwidgets/widgets/entropy_bars.py. Every row choice's values arrive at once (one small float32 buffer),
// so the rows switch repaints without asking the kernel; a click sets the synced `layer`/`head` traits.
// This file wires the parts up: the stat grids' skeleton (draw/stat_grid.ts), state.ts, paint.ts, controls.ts.

import { barAt } from "../../draw/heads";
import { type HeadPick, sameHead } from "../../draw/selection";
import { renderStatGrid, valueAt } from "../../draw/stat_grid";
import { h } from "../../shared/dom";
import type { RenderProps } from "../../shared/model";
import { scrolledCanvas } from "../../shared/widget_shell";
import { measureControls, rowsMenu } from "./controls";
import { type BarsDom, currentValues, paintBars } from "./paint";
import { type EntropyBarsTraits, entropyTip } from "./state";

export type { EntropyBarsTraits } from "./state";

function render(props: RenderProps<EntropyBarsTraits>): () => void {
  const { scroll, canvas } = scrolledCanvas("bars-canvas");
  const caption = h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" });
  const dom: BarsDom = { scroll, canvas, caption, lastAvail: 0, layout: null };
  const barFor = (e: MouseEvent): HeadPick | null => {
    if (!dom.layout) return null;
    const rect = canvas.getBoundingClientRect();
    return barAt(dom.layout, e.clientX - rect.left, e.clientY - rect.top);
  };
  return renderStatGrid<EntropyBarsTraits, HeadPick>(props, {
    className: "aw-entropy-bars",
    canvas,
    body: [scroll, caption],
    menu: "rows",
    repaintOn: [],
    controls: (g, list) => rowsMenu(g.model, list),
    extras: (g, list) => measureControls(g.model, list),
    paint: (g) => paintBars(g, dom),
    hitAt: (g, e) => (currentValues(g) ? barFor(e) : null),
    same: sameHead,
    tip: (g, hit) => {
      const m = g.model.get("_meta");
      const v = valueAt(currentValues(g), m.shape[1], hit.layer, hit.head);
      return entropyTip(m, g.model.get("rows"), v, hit);
    },
    headAt: (_g, e) => barFor(e),
  });
}

export default { render };
