// A file aw.save wrote (a result, corpus statistics, dependency scores, a sweep, a pruning curve, head importance),
// opened from the file browser as a document with no code and no kernel. The server extension reads the file through
// the package's validated loader (GET <base>/attnwidgets/saved?path=..., attnwidgets/server.py and saved_doc.py) and
// answers with the saved states of the views that show it, each the entry a view puts under
// application/vnd.attnwidgets.view+json in a notebook; they are drawn here by renderSaved, as a saved notebook's views
// are. A file the loader refuses (tampered, damaged, not an attnwidgets file, too big) shows the loader's message, as
// text; nothing else is drawn.
//
// Default for .npz: this document is the default factory for the "attnwidgets-saved" file type (.npz), so a
// double-click opens it. JupyterLab has no viewer of its own for .npz (a NumPy zip archive): without this, a
// double-click opens the text editor on binary data. An .npz that another tool wrote gets the loader's clear message
// ("not a file attnwidgets saved") in the document, and "Open With" still lists the editor. Other files are not
// touched: the file type names .npz only.
//
// The document's model loads no content (a model factory with fileFormat null): a saved result can be hundreds of MB,
// and the page needs only what the server answers, never the file's bytes.

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from "@jupyterlab/application";
import {
  ABCWidgetFactory,
  DocumentModel,
  type DocumentRegistry,
  DocumentWidget,
} from "@jupyterlab/docregistry";
import { ServerConnection } from "@jupyterlab/services";
import { spreadsheetIcon } from "@jupyterlab/ui-components";
import { Widget } from "@lumino/widgets";
import { renderSaved, showSavedError } from "../shared/saved_view";
import { MODULES } from "./modules";

export const FILE_TYPE = "attnwidgets-saved";
export const FACTORY = "attnwidgets saved file";
const MODEL = "attnwidgets-no-content";

/** What the server answers for a file (attnwidgets/saved_doc.py document()). */
export interface SavedDocument {
  kind: string;
  name: string;
  summary: string;
  model: string | null;
  saved_by: string | null;
  created: string | null;
  views: { title: string; state: unknown }[];
  table: { title: string; columns: string[]; rows: unknown[][] } | null;
}

/** A model that loads nothing: the document asks the server for the file's views instead. */
class NoContentModelFactory implements DocumentRegistry.IModelFactory<DocumentRegistry.IModel> {
  readonly name = MODEL;
  readonly contentType = "file" as const;
  readonly fileFormat = null;
  readonly collaborative = false;
  isDisposed = false;
  dispose(): void {
    this.isDisposed = true;
  }
  preferredLanguage(): string {
    return "";
  }
  createNew(options?: DocumentRegistry.IModelOptions): DocumentRegistry.IModel {
    return new DocumentModel({
      languagePreference: options?.languagePreference,
      collaborationEnabled: false,
    });
  }
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls: string,
  text = "",
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = cls;
  e.textContent = text; // the file's text (tokens, names) is text, never markup
  return e;
}

function cell(value: unknown): string {
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  return value === null || value === undefined ? "" : String(value);
}

function drawTable(el: HTMLElement, table: NonNullable<SavedDocument["table"]>): void {
  el.append(element("h3", "aw-doc-title", table.title));
  const t = element("table", "aw-doc-table");
  const head = t.createTHead().insertRow();
  for (const c of table.columns) head.append(element("th", "", c));
  const body = t.createTBody();
  for (const row of table.rows) {
    const tr = body.insertRow();
    for (const v of row) tr.append(element("td", "", cell(v)));
  }
  el.append(t);
}

const STYLE = `
.aw-saved-file { overflow: auto; padding: 12px 20px; font: 13px system-ui, sans-serif;
  color: var(--jp-ui-font-color1); background: var(--jp-layout-color0); }
.aw-saved-file h2 { font-size: 16px; margin: 0 0 4px; }
.aw-saved-file h3 { font-size: 14px; margin: 16px 0 6px; }
.aw-saved-file .aw-doc-meta { color: var(--jp-ui-font-color2); margin: 2px 0; }
.aw-saved-file .aw-doc-table { border-collapse: collapse; }
.aw-saved-file .aw-doc-table th, .aw-saved-file .aw-doc-table td { border: 1px solid var(--jp-border-color2);
  padding: 2px 8px; text-align: right; }
`;

/** The document's content: the file's summary, its views drawn from their saved states, and its table. */
export class SavedFileView extends Widget {
  private cleanups: (() => void)[] = [];

  private loads = 0;

  constructor(private context: DocumentRegistry.Context) {
    super();
    this.addClass("aw-saved-file");
    this.node.append(element("style", "", STYLE));
    this.node.append(element("div", "aw-doc-status", "Reading the file…"));
    void context.ready.then(() => {
      void this.load();
      // File > Reload from Disk (docmanager:reload) reverts the context, which says the file changed: read it again.
      context.fileChanged.connect(this.reload, this);
    });
  }

  /** Forget what is drawn and read the file again (a newer save of the same name shows its own views). */
  private reload(): void {
    if (this.isDisposed) return;
    for (const c of this.cleanups) c();
    this.cleanups = [];
    for (const child of Array.from(this.node.children)) if (child.tagName !== "STYLE") child.remove();
    this.node.append(element("div", "aw-doc-status", "Reading the file…"));
    void this.load();
  }

  private async load(): Promise<void> {
    const load = ++this.loads; // a reload while a read is under way: only the newest answer is drawn
    const settings = ServerConnection.makeSettings();
    const path = this.context.localPath;
    const url = `${settings.baseUrl.replace(/\/$/, "")}/attnwidgets/saved?path=${encodeURIComponent(path)}`;
    let answer: (SavedDocument & { error?: undefined }) | { error: string };
    try {
      const reply = await ServerConnection.makeRequest(url, {}, settings);
      const text = await reply.text();
      try {
        answer = JSON.parse(text);
      } catch {
        answer = {
          error:
            reply.status === 404
              ? "The attnwidgets server extension is not running, so this file cannot be shown: enable it " +
                "(jupyter server extension enable attnwidgets) and restart Jupyter."
              : `The server answered ${reply.status} ${reply.statusText} for ${path}.`,
        };
      }
    } catch (e) {
      answer = {
        error: `The server could not be reached to read ${path}: ${String((e as Error)?.message ?? e)}`,
      };
    }
    if (this.isDisposed || load !== this.loads) return;
    this.node.querySelector(".aw-doc-status")?.remove();
    if (answer.error !== undefined || !Array.isArray((answer as SavedDocument).views)) {
      showSavedError(this.node, String(answer.error ?? `The server's answer for ${path} holds no views.`));
      return;
    }
    await this.draw(answer as SavedDocument, load);
  }

  private async draw(doc: SavedDocument, load: number): Promise<void> {
    this.node.append(element("h2", "aw-doc-name", `${doc.name} — ${doc.kind}`));
    this.node.append(element("p", "aw-doc-summary", doc.summary));
    const meta = [
      doc.model && `model ${doc.model}`,
      doc.saved_by && `saved by attnwidgets ${doc.saved_by}`,
      doc.created && `on ${doc.created.replace("T", " ").slice(0, 19)}`,
    ]
      .filter(Boolean)
      .join(" · ");
    if (meta) this.node.append(element("p", "aw-doc-meta", meta));
    for (const view of doc.views) {
      const section = element("section", "aw-doc-view");
      section.append(element("h3", "aw-doc-title", view.title));
      const box = element("div", "aw-saved-view");
      section.append(box);
      this.node.append(section);
      const cleanup = await renderSaved(view.state, box, MODULES);
      if (this.isDisposed || load !== this.loads) {
        cleanup();
        return;
      }
      this.cleanups.push(cleanup);
    }
    if (doc.table) drawTable(this.node, doc.table);
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.context.fileChanged.disconnect(this.reload, this);
    for (const c of this.cleanups) c();
    this.cleanups = [];
    super.dispose();
  }
}

class SavedFileFactory extends ABCWidgetFactory<DocumentWidget<SavedFileView>> {
  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<SavedFileView> {
    const widget = new DocumentWidget({ content: new SavedFileView(context), context });
    widget.title.icon = spreadsheetIcon;
    return widget;
  }
}

export const savedFilePlugin: JupyterFrontEndPlugin<void> = {
  id: "attnwidgets:saved-files",
  description: "Opens a file aw.save wrote (.npz) as a document that draws its views, with no kernel.",
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    const registry = app.docRegistry;
    registry.addModelFactory(new NoContentModelFactory());
    registry.addFileType({
      name: FILE_TYPE,
      displayName: "attnwidgets saved file",
      extensions: [".npz"],
      mimeTypes: ["application/x-npz"],
      contentType: "file",
      fileFormat: "base64",
      icon: spreadsheetIcon,
    });
    registry.addWidgetFactory(
      new SavedFileFactory({
        name: FACTORY,
        label: "attnwidgets views",
        modelName: MODEL,
        fileTypes: [FILE_TYPE],
        defaultFor: [FILE_TYPE],
        readOnly: true,
      }),
    );
  },
};
