// Draws the views of a page written by `attnwidgets export` (attnwidgets/nbexport.py): every view's front end and
// the saved-view renderer, inlined once per page. Each `.aw-saved` element names (data-aw) the
// `<script type="application/json">` that holds its saved state; the view is drawn live over its picture, and where
// it cannot be, the picture stays and a line says why. No network: everything is in this script and the page.

// esbuild's plugin in build.mjs makes this module: { <bundle name>: its module }, one per view.
import { views } from "aw:views";
import { type ViewModules, renderSaved } from "./saved";

async function drawViews(): Promise<void> {
  for (const host of Array.from(document.querySelectorAll<HTMLElement>(".aw-saved"))) {
    const block = document.getElementById(host.dataset.aw ?? "");
    const live = host.querySelector<HTMLElement>(".aw-live");
    const picture = host.querySelector<HTMLElement>(".aw-picture");
    const note = host.querySelector<HTMLElement>(".aw-note");
    if (!block || !live) continue;
    try {
      await renderSaved(JSON.parse(block.textContent ?? "null"), live, views as ViewModules);
      if (picture) picture.hidden = true;
      host.classList.add("aw-drawn");
    } catch (e) {
      live.remove();
      if (note) note.textContent = `Shown as a picture: ${String((e as Error)?.message ?? e)}`;
    }
  }
}

void drawViews();
