// AttentionHeatmap: one head (or the mean of a layer's heads) as a query x key heatmap on a canvas.
// Mirrors attnwidgets/widgets/heatmap.py. Only the head on screen crosses from Python; other heads are fetched on
// demand by custom message and kept in the page. Wheel / buttons zoom and dragging pans; inputs over 1024 tokens
// arrive as a block-max overview and, once zoomed in, the visible region is fetched at full detail in 256-cell tiles.
// This file wires the parts up: state.ts (what to draw and ask for), paint.ts (the canvas), controls.ts (the bar,
// the mouse and the keys).

import { legendRow } from "../../draw/canvas";
import { fitWatcher } from "../../draw/fit";
import type { HeatmapLayout } from "../../draw/layout";
import { SpanRowFetch, SpanSelector } from "../../draw/span";
import { hideTooltip, tooltipBox } from "../../draw/tooltip";
import { NO_ZOOM, type Tile, type Zoom, clampZoom, zoomAt, zoomTo } from "../../draw/zoom";
import { type Packed, decode, replyPacked } from "../../shared/buffers";
import { controlGroup } from "../../shared/dom";
import { type RenderProps, type WidgetModel, onModel, saveTraits } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { applyTheme, colormapOf, theme } from "../../shared/theme";
import { type WidgetShell, scrolledCanvas, widgetShell } from "../../shared/widget_shell";
import { type ViewHooks, buildControls, keyListener, pointerListeners } from "./controls";
import { mapLayout, paintLegend, paintMap } from "./paint";
import {
  type HeatmapTraits,
  type HeatmapView,
  type Labels,
  type MatrixData,
  type TileData,
  type ViewChange,
  cellTip,
  detailLevel,
  geometryData,
  keyOf,
  matrixData,
  regionRequest,
  spanKey,
  tileKey,
  titleText,
  valueAt,
  viewFields,
} from "./state";

export type { HeatmapTraits } from "./state";

type Model = WidgetModel<HeatmapTraits>;

/** The page's parts: the shell (title, bar, error box), the map's canvas in its scroll box, the legend, the tooltip. */
function makeDom(model: Model, el: HTMLElement) {
  const shell = widgetShell(model, el, "aw-heatmap");
  const { scroll, canvas } = scrolledCanvas("heatmap-canvas");
  const tooltip = tooltipBox();
  const legend = legendRow();
  shell.root.append(shell.title, shell.bar, shell.errorBox, scroll, legend.legend, tooltip);
  return { shell, scroll, canvas, tooltip, legend };
}

/** One heatmap on the page: what it shows (the matrix, its tiles, the zoom, the hover) and how it gets it. */
class Heatmap {
  readonly dom: ReturnType<typeof makeDom>;
  readonly shell: WidgetShell;
  readonly requester: Requester<HeatmapTraits>;
  readonly spans: SpanSelector;
  readonly spanRows = new SpanRowFetch();
  readonly controls: Array<() => void>;
  readonly fit: ReturnType<typeof fitWatcher>;
  layout: HeatmapLayout | null = null;
  current: MatrixData | null = null;
  tiles = new Map<string, TileData>(); // full-detail tiles of the current view, by tileKey
  hover: { q: number; k: number } | null = null;
  zoom: Zoom = NO_ZOOM;
  dims = ""; // the matrix's size when the zoom was last set from the trait
  wordLabels: Labels | null = null; // word-level labels of every kind, once asked for

  constructor(
    readonly model: Model,
    el: HTMLElement,
  ) {
    this.dom = makeDom(model, el);
    this.shell = this.dom.shell;
    this.requester = new Requester(model);
    this.spans = new SpanSelector(model);
    this.controls = controlGroup(this.shell.cleanups);
    this.fit = fitWatcher(model, el, this.shell.root, () => this.paint());
    this.shell.cleanups.push(this.fit.cleanup);
  }

  view(): HeatmapView {
    const m = this.model;
    return { kind: m.get("kind"), layer: m.get("layer"), head: m.get("head"), words: m.get("words") };
  }

  spanKeyNow(): string {
    return spanKey(this.view(), this.model.get("selection") ?? [], this.model.get("combine"));
  }

  hooks(): ViewHooks {
    return {
      update: (changes) => this.update(changes),
      zoomBy: (factor) => this.zoomCentre(factor),
      zoomReset: () => this.setZoom(NO_ZOOM),
      spans: this.spans,
      exportControls: (list) => this.shell.exportControls(list),
    };
  }

  buildControls(): void {
    buildControls(this.model, this.shell.bar, this.controls, this.hooks());
  }

  update(changes: ViewChange): void {
    saveTraits(this.model, changes);
    this.refresh();
  }

  paint(): void {
    const c = this.current;
    if (!c) return;
    const { model, dom } = this;
    const t = theme(model.get("theme"));
    applyTheme(this.shell.root, t);
    const map = colormapOf(this.model);
    const [queries, keys] = c.labels;
    const selection = model.get("selection") ?? [];
    const row = selection.length ? this.spanRows.get(this.spanKeyNow()) : null;
    const l = mapLayout(t, queries, keys, this.fit.room(dom.scroll), row !== null);
    this.layout = l;
    if (this.dims !== `${l.nq}x${l.nk}`) {
      this.dims = `${l.nq}x${l.nk}`; // a new size: the zoom Python asked for, or the whole matrix
      const asked = model.get("zoom");
      this.zoom = asked?.length === 4 ? zoomTo(l, asked[0], asked[1], asked[2], asked[3]) : NO_ZOOM;
    }
    const zoom = clampZoom(l, this.zoom);
    this.zoom = zoom;
    const combine = model.get("combine");
    const scene = {
      t,
      map,
      l,
      zoom,
      current: c,
      tiles: this.tiles,
      hover: this.hover,
      selection,
      row,
      combine,
    };
    const { wanted, shown } = paintMap(dom.canvas, scene);
    Object.assign(dom.canvas.dataset, geometryData(l, zoom), {
      view: c.key,
      vmax: String(c.vmax),
      factor: String(c.factor),
      detail: detailLevel(c.factor, wanted.length, shown),
      selection: selection.join(","),
      span: row ? this.spanKeyNow() : "",
    });
    const meta = model.get("_meta");
    paintLegend(dom.legend, map, c.vmax, meta);
    const extras = { zoom: zoom.z, factor: c.factor, rowsUsed: c.rowsUsed, queries, selection, combine };
    this.shell.title.textContent = titleText(meta, this.view(), extras);
    if (wanted.length > shown) this.fetchTiles(wanted);
  }

  setZoom(v: Zoom): void {
    this.zoom = this.layout ? clampZoom(this.layout, v) : NO_ZOOM;
    this.paint();
  }

  zoomCentre(factor: number): void {
    const l = this.layout;
    if (l) this.setZoom(zoomAt(l, this.zoom, factor, l.x0 + (l.cell * l.nk) / 2, l.y0 + (l.cell * l.nq) / 2));
  }

  /** Fetch the visible full-detail tiles of a long input (cached per view by the Requester). */
  fetchTiles(wanted: Tile[]): void {
    const key = this.current?.key;
    if (!key) return;
    const view = this.view();
    for (const tl of wanted) {
      const name = tileKey(tl.q0, tl.k0);
      if (this.tiles.has(name)) continue;
      this.requester
        .get(`${key}/tile/${name}`, regionRequest(view, tl))
        .then((reply) => {
          if (this.current?.key !== key || this.tiles.has(name)) return;
          const m = decode(replyPacked(reply.content, reply.buffers[0]));
          const [rows, cols] = m.shape;
          this.tiles.set(name, { q0: tl.q0, k0: tl.k0, rows, cols, data: m.data });
          this.paint();
        })
        .catch((e: Error) => this.shell.showError(String(e.message ?? e)));
    }
  }

  /** Fetch the selection's combined row (Python computes it: viewdata/selection.py span_row), then paint. */
  fetchSpan(): Promise<void> {
    const selection = this.model.get("selection") ?? [];
    const request = { ...viewFields(this.view()), selection, combine: this.model.get("combine") };
    const { requester, shell } = this;
    const key = () => this.spanKeyNow();
    return this.spanRows.fetch(
      requester,
      selection.length > 0,
      key,
      request,
      () => this.paint(),
      shell.showError,
    );
  }

  /** Labels of a kind at a level: word-level ones from _payload or a "labels" request (a saved page answers it). */
  async labelsFor(kind: string, words: boolean): Promise<[string[], string[]]> {
    if (words && !this.wordLabels) {
      const reply = await this.requester.get("labels/w", { what: "labels", words: true });
      this.wordLabels = reply.content.tokens as Labels;
    }
    return (words ? this.wordLabels?.[kind] : this.model.get("_meta").tokens[kind]) ?? [[], []];
  }

  accept(
    key: string,
    packed: Packed,
    factor: number,
    labels: [string[], string[]],
    vmax?: number,
    rows?: number,
  ) {
    const next = matrixData(key, decode(packed), factor, labels, vmax, rows);
    if (this.current?.key !== key) this.tiles = new Map();
    this.current = next;
    this.paint();
  }

  /** Show the view the traits name: the payload's matrix when it is that view, else a "matrix" request. */
  async refresh(): Promise<void> {
    const view = this.view();
    const key = keyOf(view);
    const initial = this.model.get("_payload");
    const first = initial && "key" in initial && initial.key === key ? initial : null;
    if (first?.labels) this.wordLabels ??= first.labels.tokens;
    try {
      if (first) {
        // Token-level labels are at hand, so the first paint needs no round trip.
        const labels = await this.labelsFor(view.kind, view.words);
        if (keyOf(this.view()) === key)
          this.accept(key, first.matrix, first.factor ?? 1, labels, first.vmax, first.rows_used);
        return;
      }
      const [labels, reply] = await Promise.all([
        this.labelsFor(view.kind, view.words),
        this.requester.get(key, { what: "matrix", ...viewFields(view) }),
      ]);
      if (keyOf(this.view()) !== key) return; // the user moved on while we waited
      const c = reply.content;
      const num = (v: unknown) => (v === undefined ? undefined : Number(v));
      const packed = replyPacked(c, reply.buffers[0]);
      this.accept(key, packed, Number(c.factor ?? 1), labels, num(c.vmax), num(c.rows_used));
      this.shell.showError(this.model.get("_error"));
    } catch (e) {
      this.shell.showError(String((e as Error).message ?? e));
    }
  }

  /** The mouse on the map and the keys on the view. */
  listen(): void {
    const { dom, shell } = this;
    shell.cleanups.push(
      ...pointerListeners(dom.canvas, shell.root, dom.tooltip, {
        layout: () => this.layout,
        zoom: () => this.zoom,
        setZoom: (z) => this.setZoom(z),
        tip: (cell) => {
          const c = this.current;
          if (!c) return { text: "", data: {} };
          const [queries, keys] = c.labels;
          return cellTip(
            queries,
            keys,
            cell,
            valueAt(c, this.tiles.values(), keys.length, cell.q, cell.k),
            c.factor,
          );
        },
        setHover: (cell) => {
          this.hover = cell;
          this.paint();
        },
        clickRow: (q, e) => this.spans.click(q, e),
      }),
      keyListener(this.model, shell.root, {
        ...this.hooks(),
        rows: () => this.current?.labels[0].length ?? 0,
        rebuild: () => this.buildControls(),
      }),
    );
  }
}

/** The model's events: a new view, new metadata, a zoom from Python, a selection, new colours. */
function wireModel(v: Heatmap): void {
  const { model, shell } = v;
  const rebuild = () => {
    hideTooltip(v.dom.tooltip); // it described the old map
    v.buildControls();
    v.refresh().then(() => v.fetchSpan());
  };
  const spanChanged = () => {
    v.buildControls();
    v.fetchSpan();
  };
  const zoomFromPython = () => {
    const z = model.get("zoom");
    if (v.layout && z?.length === 4) v.setZoom(zoomTo(v.layout, z[0], z[1], z[2], z[3]));
  };
  for (const ev of ["change:layer", "change:head", "change:kind", "change:words"])
    shell.cleanups.push(onModel(model, ev, rebuild));
  shell.cleanups.push(
    onModel(model, "change:_meta", () => {
      v.requester.clear();
      v.wordLabels = null;
      rebuild();
    }),
    onModel(model, "change:zoom", zoomFromPython),
    onModel(model, "change:selection", spanChanged),
    onModel(model, "change:combine", spanChanged),
    onModel(model, "change:theme", () => v.paint()),
    onModel(model, "change:colormap", () => v.paint()),
  );
  rebuild();
}

function render({ model, el }: RenderProps<HeatmapTraits>): () => void {
  const view = new Heatmap(model, el);
  view.listen();
  wireModel(view);
  return () => {
    view.shell.close();
    view.requester.dispose();
  };
}

export default { render };
