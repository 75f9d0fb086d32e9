// Draws the views of a page written by `attnwidgets export` (attnwidgets/nbexport.py): every view's front end and
// the saved-view reader (shared/saved_view.ts, the one the JupyterLab extension uses), inlined once per page. Each
// `.aw-saved` element names (data-aw) the `<script type="application/json">` that holds its saved state; the view is
// drawn live over its picture, and where it cannot be, the picture stays and a line says why. No network: everything
// is in this script and the page.

// esbuild's plugin in build.mjs makes this module: { <bundle name>: its module namespace }, one per view.
import { views } from "aw:views";
import { isSavedBox } from "../shared/saved_box";
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
    const checked = isSavedBox(data) ? null : checkSaved(data); // a box's children are checked as they draw
    if (checked && !checked.ok) {
      live.remove();
      if (note) note.textContent = `Shown as a picture: ${checked.message}`;
      continue;
    }
    await renderSaved(data, live, modules);
    // The view (or the box as a whole) could not be drawn; a box's child that cannot shows its message in its slot.
    const error = live.querySelector(":scope > .aw-saved-error");
    if (error) {
      // The view could not be drawn: its picture stays, with the reason under it.
      const shown = host.querySelector(".aw-picture img") ? "Shown as a picture: " : "";
      if (note) note.textContent = `${shown}${error.textContent ?? ""}`;
      live.remove();
    } else {
      host.classList.add("aw-drawn");
    }
  }
}

void drawViews();
