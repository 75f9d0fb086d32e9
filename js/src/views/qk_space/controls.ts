// QKSpaceView's controls: the colour menu, hover (the token in its sentence) and a click on a point (its sentence's
// attention opens in the panel).

import { hoverTooltip } from "../../draw/tooltip";
import { h, listen, resetControls, select } from "../../shared/dom";
import { type WidgetModel, saveTraits } from "../../shared/model";
import type { WidgetShell } from "../../shared/widget_shell";
import type { Dom, State } from "./paint";
import { type ColorBy, type QKSpaceTraits, colorOptions, gridNearest, pointPick, pointTip } from "./state";

type Model = WidgetModel<QKSpaceTraits>;

/** (Re)build the bar: the colour menu and the export buttons. */
export function buildControls(model: Model, shell: WidgetShell, controls: Array<() => void>): void {
  resetControls(controls, shell.bar);
  const menu = select(colorOptions(model.get("_meta")), model.get("color"), "colour by");
  menu.dataset.testid = "color-select";
  controls.push(listen(menu, "change", () => saveTraits(model, { color: menu.value as ColorBy })));
  shell.bar.append(h("label", {}, "colour by", menu), shell.exportControls(controls));
}

/** Hover names a point in its sentence (`hovered` repaints); a click opens its sentence and, on a query point,
 * selects its token (state.ts pointPick); Escape clears the selection. */
export function pointListeners(
  model: Model,
  dom: Dom,
  st: State,
  root: HTMLElement,
  hovered: (i: number) => void,
): Array<() => void> {
  const hitAt = (e: MouseEvent): number | null => {
    if (!st.grid) return null;
    const rect = dom.scatter.getBoundingClientRect();
    const i = gridNearest(st.grid, st.px, e.clientX - rect.left, e.clientY - rect.top, st.radius + 4);
    return i < 0 ? null : i;
  };
  return [
    ...hoverTooltip(dom.scatter, root, dom.tooltip, {
      hitAt,
      same: (a, b) => a === b,
      tip: (i) => pointTip(model.get("_meta"), st.points, model.get("color"), i),
      changed: (i) => hovered(i ?? -1),
    }),
    listen(dom.scatter, "click", (e: MouseEvent) => {
      const i = hitAt(e);
      if (i === null) return;
      const now = { sentence: model.get("sentence"), selection: model.get("selection") ?? [] };
      const { anchor, ...pick } = pointPick(st.points, i, now, e, st.anchor);
      st.anchor = anchor;
      saveTraits(model, pick);
    }),
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (e.key !== "Escape" || !(model.get("selection") ?? []).length) return;
      st.anchor = null;
      saveTraits(model, { selection: [] });
    }),
  ];
}
