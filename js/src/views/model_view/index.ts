// ModelView: every layer x head as a thumbnail; click one to see that head at full resolution beside the grid.
// Mirrors attnwidgets/widgets/model_view.py. Only the thumbnails (uint8, block-reduced in Python) arrive with the
// widget; a full head is fetched by "matrix" request when chosen and kept in the page.
// This file wires the parts up: state.ts (what to draw and ask for), paint.ts (the canvases), controls.ts (the bar,
// the mouse and the keys).

import { legendRow } from "../../draw/canvas";
import { fitWatcher } from "../../draw/fit";
import type { HeatmapLayout } from "../../draw/layout";
import { SpanRowFetch, SpanSelector } from "../../draw/span";
import { tooltipBox } from "../../draw/tooltip";
import { decode, replyPacked } from "../../shared/buffers";
import { controlGroup, h } from "../../shared/dom";
import { type RenderProps, type WidgetModel, onModel } from "../../shared/model";
import { Requester } from "../../shared/requests";
import { applyTheme, colormapOf, theme } from "../../shared/theme";
import { type WidgetShell, widgetShell } from "../../shared/widget_shell";
import { buildControls, keyListeners, pointerListeners } from "./controls";
import { type DetailScene, detailLayout, paintDetail, paintGrid, paintLegend, thumbImage } from "./paint";
import {
  type Detail,
  type GridGeometry,
  type ModelViewTraits,
  type Thumbs,
  cellTip,
  detailKey,
  detailOf,
  detailTitle,
  gridGeometry,
  gridTitle,
  gridWidth,
  spanKey,
  thumbAt,
  thumbTip,
  thumbsOf,
} from "./state";

export type { ModelViewTraits } from "./state";

type Model = WidgetModel<ModelViewTraits>;

/** The page's parts: the shell, the grid of thumbnails and, beside it, the detail with its title and legend. */
function makeDom(model: Model, el: HTMLElement) {
  const shell = widgetShell(model, el, "aw-model-view");
  const grid = h("canvas", { className: "aw-canvas", "data-testid": "thumb-grid" });
  const detailTitle = h("div", {
    className: "aw-muted",
    "data-testid": "detail-title",
    "data-export-text": "",
  });
  const detail = h("canvas", { className: "aw-canvas", "data-testid": "heatmap-canvas" });
  const legend = legendRow();
  const tooltip = tooltipBox();
  const detailBox = h("div", { className: "aw-scroll" }, detailTitle, detail, legend.legend);
  // The thumbnails never shrink under their width (a narrower notebook, the file browser open, cut them after
  // head 8, the scroll box's bar below the fold): the detail wraps under them instead.
  const gridBox = h("div", { className: "aw-scroll", style: "flex: 0 0 auto" }, grid);
  const body = h("div", {}, gridBox, detailBox);
  body.style.cssText = "display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap";
  shell.root.append(shell.title, shell.bar, shell.errorBox, body, tooltip);
  return { shell, grid, detailTitle, detail, legend, tooltip, detailBox, body };
}

/** One model view on the page: the thumbnails, the chosen head in full, what is hovered, and how it gets them. */
class ModelView {
  readonly dom: ReturnType<typeof makeDom>;
  readonly shell: WidgetShell;
  readonly requester: Requester<ModelViewTraits>;
  readonly spans: SpanSelector;
  readonly spanRows = new SpanRowFetch();
  readonly controls: Array<() => void>;
  readonly fit: ReturnType<typeof fitWatcher>;
  geom: GridGeometry | null = null;
  thumbs: { image: HTMLCanvasElement; shape: number[] } | null = null;
  shape: number[] = [0, 0, 0, 0]; // the last thumbnails' [layers, heads, rows, cols], kept while others load
  fetchedThumbs: Thumbs | null = null; // a saved page's thumbnails of another kind (a "thumbs" request)
  layout: HeatmapLayout | null = null;
  current: Detail | null = null;
  hoverThumb: { layer: number; head: number } | null = null;
  hoverCell: { q: number; k: number } | null = null;

  constructor(
    readonly model: Model,
    el: HTMLElement,
  ) {
    this.dom = makeDom(model, el);
    this.shell = this.dom.shell;
    this.requester = new Requester(model);
    this.spans = new SpanSelector(model);
    this.controls = controlGroup(this.shell.cleanups);
    // Fitted, the grid and the detail sit side by side inside the box (the detail was below the fold at 1280 x 720).
    this.fit = fitWatcher(model, el, this.shell.root, () => {
      this.paintGrid();
      this.paintDetail();
    });
    this.shell.cleanups.push(this.fit.cleanup);
  }

  kind(): string {
    return this.model.get("kind");
  }

  tokens(): [string[], string[]] {
    return this.model.get("_meta").tokens[this.kind()] ?? [[], []];
  }

  spanKeyNow(): string {
    const m = this.model;
    return spanKey(this.kind(), m.get("layer"), m.get("head"), m.get("selection") ?? [], m.get("combine"));
  }

  buildControls(): void {
    const { model, shell, controls, spans } = this;
    buildControls(model, shell.bar, controls, spans, (list) => shell.exportControls(list));
  }

  /** The thumbnails of the kind on screen: the synced trait, or (in a saved page, where no kernel updates the
   *  trait when the kind changes) a "thumbs" request answered from the page's saved replies. */
  thumbsNow(): Thumbs | null {
    const t = this.model.get("_payload");
    if (t && "thumbs" in t && t.kind === this.kind()) return t as Thumbs;
    if (this.fetchedThumbs && this.fetchedThumbs.kind === this.kind()) return this.fetchedThumbs;
    return null;
  }

  async fetchThumbs(): Promise<void> {
    const k = this.kind();
    try {
      const reply = await this.requester.get(`thumbs/${k}`, { what: "thumbs", kind: k });
      if (k !== this.kind() || this.thumbsNow()) return; // the trait arrived first, or the kind moved on
      this.fetchedThumbs = thumbsOf(k, reply.content, replyPacked(reply.content, reply.buffers[0]));
      this.all();
    } catch (e) {
      this.shell.showError(String((e as Error).message ?? e));
    }
  }

  buildThumbs(): void {
    const t = this.thumbsNow();
    this.thumbs = t
      ? thumbImage(t, this.model.get("_meta").causal[t.kind] ?? false, colormapOf(this.model))
      : null;
    if (this.thumbs) this.shape = this.thumbs.shape;
  }

  paintGrid(): void {
    const { model, dom } = this;
    const t = theme(model.get("theme"));
    applyTheme(this.shell.root, t);
    const [L, H] = this.shape;
    const room = this.fit.room(dom.body);
    dom.body.style.flexWrap = room ? "nowrap" : "wrap";
    const g = gridGeometry(L, H, gridWidth(t.maxGrid, room?.width), t.font, room?.height);
    this.geom = g;
    paintGrid(dom.grid, {
      t,
      g,
      image: this.thumbs?.image ?? null,
      shape: this.shape,
      groupSize: model.get("_meta").kv_group_size?.[this.kind()] ?? 1,
      hover: this.hoverThumb,
      chosen: { layer: model.get("layer"), head: model.get("head") },
    });
    dom.grid.dataset.factor = String(this.thumbsNow()?.factor ?? 1);
  }

  paintDetail(): void {
    const d = this.current;
    if (!d) return;
    const { model, dom } = this;
    const t = theme(model.get("theme"));
    const map = colormapOf(this.model);
    const selection = model.get("selection") ?? [];
    const row = selection.length ? this.spanRows.get(this.spanKeyNow()) : null;
    const combine = model.get("combine");
    const scene: DetailScene = {
      t,
      map,
      d,
      tokens: this.tokens(),
      hover: this.hoverCell,
      selection,
      row,
      combine,
    };
    // Beside the grid: the box's width less the grid's and the gap; its height less the detail's title and legend.
    const room = this.fit.room(dom.body);
    const chrome = dom.detailBox.getBoundingClientRect().height - dom.detail.getBoundingClientRect().height;
    const box = room
      ? { width: room.width - (this.geom?.width ?? 0) - 16, height: room.height - chrome }
      : null;
    const l = detailLayout(scene, box);
    this.layout = l;
    paintDetail(dom.detail, scene, l);
    Object.assign(dom.detail.dataset, {
      selection: selection.join(","),
      span: row ? this.spanKeyNow() : "",
      x0: String(l.x0),
      y0: String(l.y0),
      cell: String(l.cell),
      nq: String(l.nq),
      nk: String(l.nk),
      view: d.key,
      factor: String(d.factor),
    });
    paintLegend(dom.legend, map, d.vmax);
    dom.detailTitle.textContent = detailTitle(
      model.get("_meta"),
      this.kind(),
      d,
      scene.tokens[0],
      selection,
      combine,
    );
  }

  async fetchDetail(): Promise<void> {
    const { model } = this;
    const k = this.kind();
    const layer = model.get("layer");
    const head = model.get("head");
    const key = detailKey(k, layer, head);
    try {
      const reply = await this.requester.get(key, { what: "matrix", kind: k, layer, head });
      if (key !== detailKey(this.kind(), model.get("layer"), model.get("head"))) return; // moved on meanwhile
      this.current = detailOf(key, decode(replyPacked(reply.content, reply.buffers[0])), reply.content);
      this.paintDetail();
      this.shell.showError(model.get("_error"));
    } catch (e) {
      this.shell.showError(String((e as Error).message ?? e));
    }
  }

  /** Fetch the selection's combined row for the head on screen (computed in Python), then paint the detail. */
  fetchSpan(): Promise<void> {
    const { model, requester, shell } = this;
    const selection = model.get("selection") ?? [];
    const request = { kind: this.kind(), layer: model.get("layer"), head: model.get("head"), selection };
    const fields = { ...request, combine: model.get("combine") };
    const key = () => this.spanKeyNow();
    return this.spanRows.fetch(
      requester,
      selection.length > 0,
      key,
      fields,
      () => this.paintDetail(),
      shell.showError,
    );
  }

  /** After a click or an arrow key chose a head: show it (the traits are set and synced by then). */
  chosen(): void {
    this.paintGrid();
    this.fetchDetail().then(() => this.fetchSpan());
  }

  /** New colours: thumbnails, grid and detail painted again. */
  repaint(): void {
    this.buildThumbs();
    this.paintGrid();
    this.paintDetail();
  }

  /** New thumbnails or metadata: the bar, the grid and the title again, then the chosen head. */
  all(): void {
    this.buildControls();
    this.buildThumbs();
    this.paintGrid();
    this.shell.title.textContent = gridTitle(
      this.model.get("_meta"),
      this.kind(),
      this.shape,
      this.thumbsNow(),
    );
    this.fetchDetail().then(() => this.fetchSpan());
  }

  /** The mouse on the grid and the detail, and the keys. */
  listen(): void {
    const { model, dom, shell, spans } = this;
    const parts = { grid: dom.grid, detail: dom.detail, root: shell.root, tooltip: dom.tooltip };
    shell.cleanups.push(
      ...pointerListeners(model, parts, spans, {
        thumbAt: (x, y) => (this.geom ? thumbAt(this.geom, x, y) : null),
        thumbTip: (at) => thumbTip(model.get("_meta"), this.kind(), at),
        setThumbHover: (at) => {
          this.hoverThumb = at;
          this.paintGrid();
        },
        chosen: () => this.chosen(),
        detailLayout: () => (this.current ? this.layout : null),
        cellTip: (cell) => {
          const d = this.current;
          const v = d && this.layout ? d.data[cell.q * this.layout.nk + cell.k] : Number.NaN;
          const text = cellTip(this.tokens(), cell, v, d?.factor ?? 1, model.get("_meta").reduce ?? "max");
          return { text, data: { value: String(v) } };
        },
        setCellHover: (cell) => {
          this.hoverCell = cell;
          this.paintDetail();
        },
        full: () => this.current?.factor === 1,
      }),
      ...keyListeners(
        model,
        shell.root,
        spans,
        () => this.tokens()[0].length,
        () => this.chosen(),
      ),
    );
  }
}

/** The model's events: new thumbnails or metadata, another kind, head or selection, new colours. */
function wireModel(v: ModelView): void {
  const { model, shell } = v;
  const kindChanged = () => {
    // With a kernel the new thumbnails follow as a trait; without one (a saved page) they are fetched.
    // A short wait lets the trait win in a notebook, so the kernel is not asked twice.
    const timer = setTimeout(() => {
      if (!v.thumbsNow()) v.fetchThumbs();
    }, 250);
    shell.cleanups.push(() => clearTimeout(timer));
  };
  shell.cleanups.push(
    onModel(model, "change:_payload", () => v.all()),
    onModel(model, "change:_meta", () => {
      v.requester.clear(); // a new reduction: full heads are fetched again
      v.current = null;
      v.all();
    }),
    onModel(model, "change:kind", kindChanged),
    onModel(model, "change:layer", () => v.chosen()),
    onModel(model, "change:head", () => v.chosen()),
    onModel(model, "change:theme", () => v.repaint()),
    onModel(model, "change:colormap", () => v.repaint()),
    onModel(model, "change:selection", () => {
      v.buildControls();
      v.fetchSpan();
    }),
    onModel(model, "change:combine", () => v.fetchSpan()),
  );
  v.all();
}

function render({ model, el }: RenderProps<ModelViewTraits>): () => void {
  const view = new ModelView(model, el);
  view.listen();
  wireModel(view);
  return () => {
    view.shell.close();
    view.requester.dispose();
  };
}

export default { render };
