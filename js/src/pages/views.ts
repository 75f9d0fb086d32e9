// Draws the views of a page written by `attnwidgets export` (attnwidgets/nbexport.py): every view's front end and
// the saved-view reader (shared/saved_view.ts, the one the JupyterLab extension uses), inlined once per page. Each
// `.aw-saved` element names (data-aw) the `<script type="application/json">` that holds its saved state; the view is
// drawn live over its picture, and where it cannot be, the picture stays and a line says why. No network: everything
// is in this script and the page.

// esbuild's plugin in build.mjs makes this module: { <bundle name>: its module namespace }, one per view.
import { views } from "aw:views";
import { type ViewModule, type ViewModules, checkSaved, renderSaved } from "../shared/saved_view";

const modules: ViewModules = Object.fromEntries(
  Object.entries(views as Record<string, { default?: ViewModule } & Partial<ViewModule>>).map(
    ([name, mod]) => [name, (mod.default ?? mod) as ViewModule],
  ),
);

async function drawViews(): Promise<void> {
  for (const host of Array.from(document.querySelectorAll<HTMLElement>(".aw-saved"))) {
    const block = document.getElementById(host.dataset.aw ?? "");
    const live = host.querySelector<HTMLElement>(".aw-live");
    const note = host.querySelector<HTMLElement>(".aw-note");
    if (!block || !live) continue;
    let data: unknown = null;
    try {
      data = JSON.parse(block.textContent ?? "null");
    } catch {
      data = null;
    }
    const checked = checkSaved(data);
    if (!checked.ok) {
      live.remove();
      if (note) note.textContent = `Shown as a picture: ${checked.message}`;
      continue;
    }
    await renderSaved(data, live, modules);
    const error = live.querySelector(".aw-saved-error");
    if (error) {
      // The view could not be drawn: its picture stays, with the reason under it.
      if (note) note.textContent = `Shown as a picture: ${error.textContent ?? ""}`;
      live.remove();
    } else {
      host.classList.add("aw-drawn");
    }
  }
}

void drawViews();
