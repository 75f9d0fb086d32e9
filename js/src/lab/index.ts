// The JupyterLab / Notebook 7 extension: draws a view's saved state (application/vnd.attnwidgets.view+json,
// attnwidgets/view_mime.py) with the view's own front end when no kernel holds the widget. One source, two entry
// points: the views are imported from js/src/views/, the same modules the anywidget bundles are built from; this file
// is the extension's entry (build.mjs bundles it to lib/lab.js, @jupyterlab/builder makes the federated extension
// in attnwidgets/labextension/ from that).
//
// Ranking against the live widget. The widget renderer (jupyterlab-manager) sits at rank -10 and, for a notebook
// reopened with no kernel or a fresh one, draws "Loading widget..." or "Error displaying widget: model not found"
// rather than passing the output to the next MIME type; a rank alone cannot choose between the two. So the saved
// view's renderer is registered at rank SAVED_RANK (-20, ahead of the widget) in each notebook's own rendermime
// registry, and decides per output: it asks that notebook's widget renderer (the registry's factory for the widget
// MIME type, which knows the notebook's widget manager) to draw the widget in a hidden child. If the widget manager
// has the model, that child gets the live view within a moment and is shown: the live widget wins and the saved
// view is never drawn. If it does not (no kernel, a fresh kernel, no saved widget state), the saved view is drawn;
// should the live view still arrive later (a kernel that held the widget connects after the notebook opened), it
// replaces the saved one, so the two are never shown together. This uses only the widget MIME type's public
// renderer, no private field of the widget manager, so it keeps working as jupyterlab_widgets changes inside.
//
// The renderer is "safe": it draws JSON with our own code (token text as textContent, never markup), so a notebook
// received from someone else (untrusted) shows its views live too, as Plotly's figures do.

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import { INotebookTracker, type NotebookPanel } from "@jupyterlab/notebook";
import type { IRenderMimeRegistry } from "@jupyterlab/rendermime";
import type { IRenderMime } from "@jupyterlab/rendermime-interfaces";
import { Panel, Widget } from "@lumino/widgets";
import { VIEW_MIME, checkSaved, renderSaved, showSavedError } from "../shared/saved_view";
import { launcherPlugin, lecturePlugin } from "./commands";
import { MODULES } from "./modules";
import { savedFilePlugin } from "./saved_file";

export const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";

/** Ahead of the widget renderer's -10, so this renderer decides between the live widget and the saved view. */
export const SAVED_RANK = -20;

/** How long a live view may take to appear before the saved one is drawn (it still replaces it when it comes). */
const LIVE_WAIT_MS = 400;

interface Host {
  rendermime: IRenderMimeRegistry;
  /** Resolves when the notebook's session is ready: the widget manager is registered soon after. */
  ready: Promise<void>;
}

function modelId(data: unknown): string {
  const id = data && typeof data === "object" ? (data as { model_id?: unknown }).model_id : "";
  return typeof id === "string" ? id : "";
}

const PROBE_STYLE = "height: 0; overflow: hidden; visibility: hidden;";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One output: the live widget when the notebook's widget manager has its model, else the saved view. */
export class SavedViewRenderer extends Panel implements IRenderMime.IRenderer {
  private probes: IRenderMime.IRenderer[] = [];
  private live: IRenderMime.IRenderer | null = null;
  private saved: Widget | null = null;
  private cleanup: (() => void) | null = null;

  constructor(private host: Host | null) {
    super();
    this.addClass("aw-saved-output");
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.clear();
    if (this.host && modelId(model.data[WIDGET_MIME])) {
      if (await this.probe(model, LIVE_WAIT_MS)) return;
      // A kernel that holds the widget may connect after the notebook opened: look again once it has.
      void this.host.ready.then(async () => {
        for (const wait of [300, 2000]) {
          await sleep(wait);
          if (this.isDisposed || this.live) return;
          void this.probe(model, 0);
        }
      });
    }
    if (!this.live) await this.drawSaved(model);
  }

  /** Ask the widget renderer to draw the output in a hidden child; true if a live view appeared within `wait` ms. */
  private probe(model: IRenderMime.IMimeModel, wait: number): Promise<boolean> {
    let child: IRenderMime.IRenderer;
    try {
      child = (this.host as Host).rendermime.createRenderer(WIDGET_MIME);
    } catch {
      return Promise.resolve(false); // no widget renderer here (jupyterlab_widgets missing): the saved view it is
    }
    // Out of sight but laid out at the output's width (not display: none), so a live view that turns up measures the
    // width it will be shown at (fit="auto" sizes to it).
    child.node.style.cssText = PROBE_STYLE;
    this.addWidget(child);
    this.probes.push(child);
    return new Promise((resolve) => {
      // The widget renderer adds the view as a child element once its model is found; until then it shows text.
      const hasView = () => child.node.querySelector(":scope > *") !== null;
      const observer = new MutationObserver(() => {
        if (!hasView() || this.isDisposed) return;
        observer.disconnect();
        this.showLive(child);
        resolve(true);
      });
      observer.observe(child.node, { childList: true });
      child.disposed.connect(() => observer.disconnect());
      void child.renderModel(model).catch(() => undefined);
      setTimeout(() => resolve(this.live === child), wait);
    });
  }

  private showLive(child: IRenderMime.IRenderer): void {
    this.live = child;
    this.dropSaved();
    for (const other of this.probes) if (other !== child) other.dispose();
    this.probes = [child];
    child.node.style.cssText = "";
  }

  private async drawSaved(model: IRenderMime.IMimeModel): Promise<void> {
    const box = new Widget();
    box.addClass("aw-saved-view");
    this.saved = box;
    this.addWidget(box);
    const data = model.data[VIEW_MIME];
    const checked = checkSaved(data);
    const png = model.data["image/png"];
    if (!checked.ok && checked.omitted && typeof png === "string") {
      // Past the budget: the picture, and the line saying why (and how to raise the budget).
      const img = document.createElement("img");
      img.src = `data:image/png;base64,${png}`;
      img.alt = "static picture of the view";
      box.node.append(img);
      showSavedError(box.node, checked.message, true);
      return;
    }
    const cleanup = await renderSaved(data, box.node, MODULES);
    if (this.saved === box) this.cleanup = cleanup;
    else cleanup(); // the live view arrived while the saved one was drawing
  }

  private dropSaved(): void {
    this.cleanup?.();
    this.cleanup = null;
    this.saved?.dispose();
    this.saved = null;
  }

  private clear(): void {
    this.dropSaved();
    for (const p of this.probes) p.dispose();
    this.probes = [];
    this.live = null;
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.clear();
    super.dispose();
  }
}

/** Our renderer in one notebook's registry, knowing that notebook's widget renderer. */
function addToNotebook(panel: NotebookPanel): void {
  const rendermime = panel.content.rendermime;
  const host: Host = { rendermime, ready: panel.sessionContext.ready };
  rendermime.addFactory(
    { safe: true, mimeTypes: [VIEW_MIME], createRenderer: () => new SavedViewRenderer(host) },
    SAVED_RANK,
  );
}

const savedViews: JupyterFrontEndPlugin<void> = {
  id: "attnwidgets:saved-views",
  description: "Draws attnwidgets views saved in a notebook's outputs when no kernel holds the widget.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, notebooks: INotebookTracker) => {
    notebooks.forEach(addToNotebook);
    notebooks.widgetAdded.connect((_sender, panel) => addToNotebook(panel));
  },
};

export default [savedViews, lecturePlugin, launcherPlugin, savedFilePlugin];
