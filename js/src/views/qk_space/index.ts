// QKSpaceView: one head's queries (filled dots) and keys (rings) over a corpus, embedded together (AttentionViz).
// Mirrors attnwidgets/widgets/qk_space.py. The points arrive as one packed (N, 9) float32 buffer; the scatter is
// painted on a canvas one path per colour, hovering and clicking hit-test through a grid of buckets (state.ts), and
// a click opens the sentence's attention on this head in the panel beside it (fetched by the widget's own message,
// so it works wherever anywidget does).
// This file wires the parts up: state.ts (points, colours, sizes, texts), paint.ts (scatter, panel), controls.ts.

import { fitWatcher } from "../../draw/fit";
import { repaintOnResize, roomFor } from "../../draw/heads";
import { tooltipBox } from "../../draw/tooltip";
import { decode, replyPacked } from "../../shared/buffers";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, onModel } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { userText } from "../../shared/text";
import { applyTheme, theme } from "../../shared/theme";
import { type WidgetShell, widgetShell } from "../../shared/widget_shell";
import { buildControls, pointListeners } from "./controls";
import { type Dom, type State, paintPanel, paintScatter } from "./paint";
import { N_COLS, type QKSpaceTraits, panelSizes } from "./state";

export type { QKSpaceTraits } from "./state";

const CSS = `
.aw-qk-row { display: flex; gap: 12px; align-items: flex-start; }
.aw-qk-panel-title { min-height: 1.2em; }
.aw-qk-space .aw-swatch { display: inline-flex; gap: 3px; align-items: center; margin-right: 8px; }
`;

function buildDom(shell: WidgetShell): Dom {
  const scatter = h("canvas", { className: "aw-canvas", "data-testid": "qk-space-canvas" });
  const panel = h("canvas", { className: "aw-canvas", "data-testid": "qk-space-panel" });
  const panelTitle = h("div", {
    className: "aw-muted aw-qk-panel-title",
    "data-testid": "qk-space-panel-title",
  });
  const row = h("div", { className: "aw-qk-row" }, scatter, h("div", {}, panelTitle, panel));
  const legend = h("div", { className: "aw-legend", "data-testid": "legend" });
  legend.style.flexWrap = "wrap";
  const note = h("div", {
    className: "aw-muted aw-hint",
    text:
      "Hover: the token in its sentence. Click: that sentence's attention on this head, beside; a query point " +
      "also selects its token (shift-click: a span, Escape clears).",
  });
  const tooltip = tooltipBox();
  shell.root.append(shell.title, shell.bar, shell.errorBox, row, legend, note, tooltip);
  return { scatter, panel, panelTitle, row, legend, tooltip };
}

function render({ model, el }: RenderProps<QKSpaceTraits>): () => void {
  const shell = widgetShell(model, el, "aw-qk-space", CSS);
  const dom = buildDom(shell);
  const { cleanups } = shell;
  const controls = controlGroup(cleanups); // the bar's listeners: removed when it is rebuilt and at teardown
  const requests = new Requester(model);
  cleanups.push(() => requests.dispose());
  const st: State = {
    points: new Float32Array(0),
    n: 0,
    px: new Float64Array(0),
    grid: null,
    layout: null,
    radius: 3,
    hover: -1,
    anchor: null,
    maps: new Map(),
  };
  const fit = fitWatcher(model, el, shell.root, () => paint());
  cleanups.push(fit.cleanup);

  function paint(): void {
    const t = theme(model.get("theme"));
    applyTheme(shell.root, t);
    shell.title.textContent = userText(model.get("_meta").title ?? "");
    const [s, p] = panelSizes(t.maxGrid, roomFor(el), fit.room(dom.row));
    try {
      paintScatter(model, dom, st, t, s);
      paintPanel(model, dom, st, t, p);
    } catch (e) {
      shell.showError(String((e as Error).message ?? e));
    }
  }

  function load(): void {
    try {
      st.points = decode(model.get("_payload").points).data;
      st.n = Math.floor(st.points.length / N_COLS);
    } catch (e) {
      shell.showError(String((e as Error).message ?? e));
    }
    buildControls(model, shell, controls);
    paint();
    fetchSentence();
  }

  function fetchSentence(): void {
    const s = model.get("sentence");
    if (s < 0 || st.maps.has(s)) return;
    requests
      .get(`sentence/${s}`, { what: "sentence", sentence: s })
      .then((reply) => {
        const mat = decode(replyPacked(reply.content, reply.buffers[0]));
        st.maps.set(s, { data: mat.data, n: mat.shape[0] });
        if (model.get("sentence") === s) paint();
      })
      .catch((e: Error) => shell.showError(String(e.message ?? e)));
  }

  cleanups.push(
    ...pointListeners(model, dom, st, shell.root, (i) => {
      st.hover = i;
      paint();
    }),
    onModel(model, "change:sentence", () => {
      paint();
      fetchSentence();
    }),
    onModel(model, "change:point", paint),
    onModel(model, "change:selection", paint),
    onModel(model, "change:color", () => {
      buildControls(model, shell, controls);
      paint();
    }),
    onModel(model, "change:colormap", paint),
    onModel(model, "change:theme", paint),
    onModel(model, "change:_payload", load),
    onModel(model, "change:_meta", load),
    repaintOnResize(el, paint),
  );
  load();
  return shell.close;
}

export default { render };
