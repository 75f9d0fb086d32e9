// The scaffolding every widget starts from: a focusable root (`aw-root` plus the widget's class) that carries its
// own styles, its title, its control bar and an error box that shows the synced `_error` trait; and a teardown that
// removes the listeners gathered in `cleanups` and the root.

import { h, listen, ownKey, typedInControl } from "./dom";
import { exportButtons, safeName } from "./export";
import { type WidgetModel, onModel, saveTraits } from "./model";
import { BASE_CSS } from "./theme";

export interface WidgetShell {
  root: HTMLDivElement;
  title: HTMLDivElement;
  bar: HTMLDivElement;
  errorBox: HTMLDivElement;
  /** Listeners to remove on teardown; a widget pushes its own. */
  cleanups: Array<() => void>;
  /** Show `msg` in the error box, or hide the box when it is empty. */
  showError(msg: string): void;
  /** The PNG/SVG export buttons, files named after the title; their listeners go to `list`. */
  exportControls(list: Array<() => void>): HTMLElement;
  /** Run the cleanups and take the root out of the page. */
  close(): void;
}

/**
 * Build the root inside `el` (children are the widget's to append) and keep the error box on `_error`. The root's
 * first child is a `<style>` with the shared CSS and the widget's own `css`: styles that live in the widget reach
 * it in every host (a shadow root in marimo, the document in JupyterLab and Notebook, a saved page).
 */
export function widgetShell<T extends { _error: string }>(
  model: WidgetModel<T>,
  el: HTMLElement,
  className: string,
  css = "",
): WidgetShell {
  const root = h("div", { className: `aw-root ${className}`, tabindex: 0 });
  root.append(h("style", { text: BASE_CSS + css }));
  el.append(root);
  const title = h("div", { className: "aw-title" });
  const bar = h("div", { className: "aw-bar" });
  const errorBox = h("div", { className: "aw-error", role: "alert" });
  errorBox.style.display = "none";
  const showError = (msg: string) => {
    errorBox.textContent = msg;
    errorBox.style.display = msg ? "block" : "none";
  };
  const cleanups: Array<() => void> = [];
  cleanups.push(onModel(model, "change:_error", () => showError(model.get("_error"))));
  // Keys typed in the widget's menus and boxes belong to them: JupyterLab's command-mode shortcuts (arrows move to
  // another cell, "b" inserts one), which it listens for on the document, never see them.
  cleanups.push(
    listen(root, "keydown", (e: KeyboardEvent) => {
      if (typedInControl(e) && ownKey(e)) e.stopPropagation();
    }),
  );
  showError(model.get("_error"));
  cleanups.push(followLectureMode(model as unknown as WidgetModel<{ theme: string }>));
  return {
    root,
    title,
    bar,
    errorBox,
    cleanups,
    showError,
    exportControls: (list) => exportButtons(root, () => safeName(title.textContent ?? ""), list),
    close() {
      for (const c of cleanups) c();
      root.remove();
    },
  };
}

/** The event the JupyterLab extension's lecture-mode command sends every view: `detail` is the theme to show
 * ("lecture"), or null to go back to the theme each view had before. */
export const LECTURE_EVENT = "attnwidgets:lecture";

/** Whether lecture mode is on in this page (the extension sets it on the document element). */
export function lectureMode(): boolean {
  return typeof document !== "undefined" && document.documentElement.dataset.awLecture === "1";
}

/**
 * Follow the extension's lecture mode: switch the view's theme when it turns on (a view made while it is on starts
 * in it), and back to the view's own theme when it turns off. The change is saved, so a live widget's Python side
 * knows its theme too. Returns the listener's removal.
 */
export function followLectureMode(model: WidgetModel<{ theme: string }>): () => void {
  if (typeof window === "undefined") return () => {};
  let before: string | null = null;
  const apply = (theme: string | null) => {
    if (theme && before === null) before = model.get("theme");
    const next = theme ?? before;
    if (!theme) before = null;
    if (next && next !== model.get("theme")) saveTraits(model, { theme: next });
  };
  const onEvent = (e: Event) => apply((e as CustomEvent<string | null>).detail ?? null);
  window.addEventListener(LECTURE_EVENT, onEvent);
  if (lectureMode()) apply("lecture");
  return () => window.removeEventListener(LECTURE_EVENT, onEvent);
}

/** A canvas (`aw-canvas`, test id `testid`) in a scroll box, for pictures that may be wider than the cell. */
export function scrolledCanvas(testid: string): { scroll: HTMLDivElement; canvas: HTMLCanvasElement } {
  const canvas = h("canvas", { className: "aw-canvas", "data-testid": testid });
  const scroll = h("div", { className: "aw-scroll" }, canvas);
  return { scroll, canvas };
}
