// A view's saved state (attnwidgets/view_mime.py, MIME type application/vnd.attnwidgets.view+json): checked, then
// drawn by the view's own render() on a StaticModel, with no kernel. One reader for every host that draws saved
// views: the JupyterLab / Notebook 7 extension (js/src/lab/), save_html's page (js/src/page.ts) and the pages
// `attnwidgets export` writes. A state that is corrupt, from a newer attnwidgets or names a view this build does not
// know is refused whole, with a message saying so: never half a view.

import { isSavedBox, renderBox } from "./saved_box";
import { type SavedReply, StaticModel, decodeState } from "./static_model";

export const VIEW_MIME = "application/vnd.attnwidgets.view+json";

/** The format version this build reads (view_mime.py VERSION). */
export const SAVED_VERSION = 1;

/** Each view class -> the name of its front end (js/src/views/<bundle>/), as the widgets' `_bundle` says. */
export const BUNDLES: Readonly<Record<string, string>> = {
  AttentionHeatmap: "heatmap",
  ModelView: "model_view",
  HeadView: "head_view",
  QKStepThrough: "qk",
  QKSpaceView: "qk_space",
  HeadStatsGrid: "head_stats_grid",
  EntropyBars: "entropy_bars",
  HeadClusterMap: "head_cluster_map",
  AblationWidget: "ablation",
  AttentionProfile: "profile",
  GenerationView: "generation",
  AttentionCompare: "compare",
  FillMask: "fill_mask",
  MaskExplorer: "mask_explorer",
  PositionalExplorer: "positional",
  RouterView: "routers",
};

export interface SavedView {
  version: number;
  attnwidgets: string;
  widget: string;
  bundle: string;
  scope: "all" | "view";
  state: Record<string, unknown>;
  replies: Record<string, SavedReply>;
}

/** What a view's saved state holds when it passed the budget: no state, a line saying why. */
export interface OmittedView {
  version: number;
  attnwidgets: string;
  widget: string;
  bundle: string;
  omitted: string;
}

export type Checked = { ok: true; view: SavedView } | { ok: false; omitted: boolean; message: string };

/** A view's front end: what every js/src/views/<name>/index.ts exports as default. */
export interface ViewModule {
  render(props: { model: StaticModel; el: HTMLElement }): unknown;
}

/** Bundle name -> its module, or a function that loads it (the extension loads each view's code when first needed). */
export type ViewModules = Readonly<Record<string, ViewModule | (() => Promise<ViewModule>)>>;

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === "object" && !Array.isArray(v);

function checkReplies(replies: unknown): string {
  if (!isObject(replies)) return "its replies are not an object";
  for (const [key, r] of Object.entries(replies)) {
    if (!isObject(r) || !isObject(r.content) || !Array.isArray(r.buffers))
      return `its reply ${JSON.stringify(key.slice(0, 60))} is malformed`;
    if (!r.buffers.every((b) => typeof b === "string")) return "a reply's buffers are not base64 text";
  }
  return "";
}

/** Check saved state before anything is drawn; a message for the reader when it cannot be drawn. */
export function checkSaved(data: unknown): Checked {
  const bad = (why: string): Checked => ({
    ok: false,
    omitted: false,
    message: `This saved attnwidgets view cannot be drawn: ${why}. Re-run the cell with a kernel to see it.`,
  });
  if (!isObject(data)) return bad("its saved state is not an object (the notebook may be corrupt)");
  const version = data.version;
  if (typeof version !== "number" || !Number.isInteger(version))
    return bad("its saved state has no format version");
  const from = typeof data.attnwidgets === "string" ? ` (attnwidgets ${data.attnwidgets})` : "";
  if (version > SAVED_VERSION)
    return bad(
      `it was saved by a newer attnwidgets${from}, in format version ${version}; this one reads version ` +
        `${SAVED_VERSION}. Upgrade attnwidgets (pip install -U attnwidgets) and reload`,
    );
  if (version < 1) return bad(`its format version ${version} is unknown`);
  if (typeof data.widget !== "string" || !(data.widget in BUNDLES))
    return bad(
      `it names a view this attnwidgets does not know (${JSON.stringify(String(data.widget).slice(0, 60))})`,
    );
  if (data.bundle !== BUNDLES[data.widget])
    return bad(`its front end name does not match the view ${data.widget}`);
  if (typeof data.omitted === "string")
    return {
      ok: false,
      omitted: true,
      message: `This ${data.widget} was not saved live in the notebook: ${data.omitted}`,
    };
  if (data.scope !== "all" && data.scope !== "view") return bad("its scope is neither 'all' nor 'view'");
  if (!isObject(data.state) || !isObject(data.state._payload)) return bad("its state has no payload");
  const replies = checkReplies(data.replies);
  if (replies) return bad(replies);
  return { ok: true, view: data as unknown as SavedView };
}

/** A model with no kernel for a checked saved view; its buffers are decoded here, so a bad one fails before drawing. */
export function savedModel(view: SavedView, replies?: () => Record<string, SavedReply>): StaticModel {
  return new StaticModel(decodeState(view.state), replies ?? (() => view.replies), view.scope);
}

/** Show `message` in `el` as the views show errors (a red box; text, never markup). */
export function showSavedError(el: HTMLElement, message: string, omitted = false): HTMLElement {
  const box = document.createElement("div");
  box.className = omitted ? "aw-saved-omitted" : "aw-saved-error";
  box.setAttribute("role", omitted ? "note" : "alert");
  box.style.cssText = omitted
    ? "color:#57606a;font:13px system-ui,sans-serif;padding:4px 0"
    : "color:#b00020;border:1px solid #b00020;border-radius:4px;padding:6px 10px;font:13px system-ui,sans-serif;" +
      "white-space:pre-wrap";
  box.textContent = message;
  el.append(box);
  return box;
}

/**
 * Draw saved state `data` in `el` with the view's own module from `modules` (a saved box: each of its views, in a
 * flex row or column, saved_box.ts); returns the view's cleanup. A state
 * that cannot be drawn (checkSaved) or a view that throws while rendering leaves only the message in `el`.
 * `replies` overrides the saved replies with a loader called on the first request (a page parses its replies block
 * only then, so that the first paint never waits for it).
 */
export async function renderSaved(
  data: unknown,
  el: HTMLElement,
  modules: ViewModules,
  replies?: () => Record<string, SavedReply>,
): Promise<() => void> {
  // A box of views (attnwidgets/widgets/boxes.py): a row or column, each view drawn by this function.
  if (isSavedBox(data))
    return renderBox(data, el, (child, slot) => renderSaved(child, slot, modules), SAVED_VERSION);
  const checked = checkSaved(data);
  if (!checked.ok) {
    const box = showSavedError(el, checked.message, checked.omitted);
    return () => box.remove();
  }
  const { view } = checked;
  const entry = modules[view.bundle];
  if (!entry) {
    const box = showSavedError(
      el,
      `This saved ${view.widget} cannot be drawn here: its front end is not loaded.`,
    );
    return () => box.remove();
  }
  const holder = document.createElement("div");
  try {
    const mod = typeof entry === "function" ? await entry() : entry;
    const model = savedModel(view, replies);
    el.append(holder);
    const cleanup = await mod.render({ model, el: holder });
    return () => {
      if (typeof cleanup === "function") cleanup();
      holder.remove();
    };
  } catch (e) {
    holder.remove();
    const message = String((e as Error)?.message ?? e);
    const box = showSavedError(el, `This saved ${view.widget} cannot be drawn: ${message}`);
    return () => box.remove();
  }
}
