// RouterView: a mixture-of-experts decoder's routing as a token x layer strip (each cell the top expert, its strength
// the gate weight) and the chosen layer's load per expert as bars, over the selected tokens. Mirrors
// attnwidgets/widgets/routers.py. The routing arrives once (experts and gate weights, L x T x k); clicks, the
// selection (linked with a heatmap by link_span) and the weighted box redraw the bars here, with no round trip.
// This file wires the parts up: state.ts (what to show), paint.ts (the drawing), controls.ts (bar, clicks, keys).

import { fitWatcher } from "../../draw/fit";
import { hoverTooltip, tooltipBox } from "../../draw/tooltip";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, onModel } from "../../shared/model";
import { userText } from "../../shared/text";
import { applyTheme, theme } from "../../shared/theme";
import { scrolledCanvas, widgetShell } from "../../shared/widget_shell";
import { buildControls, clickRouters, routerKeys, spanPicker } from "./controls";
import { paintRouters } from "./paint";
import {
  type RouterHit,
  type RouterLayout,
  type RouterTraits,
  type Routes,
  cellTip,
  choices,
  decodeRoutes,
  loadOver,
  routerCaption,
  routerHit,
  sameHit,
} from "./state";

export type { RouterTraits } from "./state";

function render({ model, el }: RenderProps<RouterTraits>): () => void {
  const shell = widgetShell(model, el, "aw-routers");
  const { root, title, bar, errorBox, cleanups } = shell;
  const { scroll, canvas } = scrolledCanvas("routers-canvas");
  const caption = h("div", { className: "aw-muted", "data-testid": "caption", "data-export-text": "" });
  const tooltip = tooltipBox();
  root.append(title, bar, errorBox, scroll, caption, tooltip);
  const fit = fitWatcher(model, el, root, () => paint());
  cleanups.push(fit.cleanup);
  const controls = controlGroup(cleanups);
  const picker = spanPicker(model);
  let routes: Routes | null = null;
  let layout: RouterLayout | null = null;
  let hover: RouterHit = null;

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(root, t);
    const meta = model.get("_meta");
    if (!routes) routes = decodeRoutes(model.get("_payload"));
    const layer = model.get("layer");
    const li = Math.max(0, meta.layers.indexOf(layer));
    const selection = model.get("selection") ?? [];
    const weighted = model.get("weighted");
    const load = loadOver(routes, li, selection, weighted, meta.n_experts);
    const view = { meta, routes, layer, selection, weighted, hover };
    layout = paintRouters(canvas, view, t, load, fit.room([scroll]));
    title.textContent = userText(meta.title);
    caption.textContent = routerCaption(meta, layer, weighted);
  }
  const rebuild = () => buildControls(model, shell, picker, controls);

  cleanups.push(
    clickRouters(canvas, model, picker, (x, y) => (layout ? routerHit(layout, x, y) : null)),
    routerKeys(root, picker, () => routes?.nTokens ?? 0),
    ...hoverTooltip<NonNullable<RouterHit>>(canvas, root, tooltip, {
      hitAt: (e) => {
        if (!layout || !routes) return null;
        const r = canvas.getBoundingClientRect();
        return routerHit(layout, e.clientX - r.left, e.clientY - r.top);
      },
      same: sameHit,
      tip: (hit) => tipOf(hit),
      changed: (hit) => {
        hover = hit;
        paint();
      },
    }),
  );
  function tipOf(hit: NonNullable<RouterHit>): { text: string; data: Record<string, string> } {
    const meta = model.get("_meta");
    if (!routes) return { text: "", data: {} };
    if (hit.what === "cell") {
      const pairs = choices(routes, hit.li, hit.t);
      const layer = meta.layers[hit.li];
      return {
        text: cellTip(userText(meta.tokens[hit.t]), hit.t, layer, pairs),
        data: { token: String(hit.t), layer: String(layer), experts: pairs.map(([e]) => e).join(",") },
      };
    }
    if (hit.what === "layer")
      return { text: `layer ${meta.layers[hit.li]}: click to show its load`, data: {} };
    if (hit.what === "token")
      return { text: `token ${hit.t} ${userText(meta.tokens[hit.t])}`, data: { token: String(hit.t) } };
    if (hit.what === "bar") {
      const li = Math.max(0, meta.layers.indexOf(model.get("layer")));
      const load = loadOver(routes, li, model.get("selection") ?? [], model.get("weighted"), meta.n_experts);
      return {
        text: `expert ${hit.e}: ${(100 * load[hit.e]).toFixed(1)} %`,
        data: { expert: String(hit.e) },
      };
    }
    return { text: "", data: {} };
  }
  cleanups.push(
    onModel(model, "change:_payload", () => {
      routes = null;
      paint();
    }),
  );
  for (const ev of ["_meta", "layer", "theme"]) cleanups.push(onModel(model, `change:${ev}`, paint));
  for (const ev of ["selection", "weighted"])
    cleanups.push(
      onModel(model, `change:${ev}`, () => {
        rebuild();
        paint();
      }),
    );
  rebuild();
  paint();
  return shell.close;
}

export default { render };
