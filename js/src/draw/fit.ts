// Fit to screen: the box a view may use so that all of it, legend included, is on screen at once (a projector at
// 1280 x 720 shows about 600 px of notebook). The `fit` trait (attnwidgets/widgets/_base.py) says whether a view fits:
// "auto" (in the lecture theme only), true, false, or a fixed [width, height] in CSS pixels.
//
// How a view uses it (see views/heatmap/index.ts):
//   const fit = fitWatcher(model, el, root, paint);   // repaints when the box or the trait changes
//   cleanups.push(fit.cleanup);
//   ... in paint(): const room = fit.room(scroll);     // null: not fitting (draw at the theme's size)
//   room.width / room.height: what the flexible part (`scroll`, e.g. the canvas's box) may take, after the title,
//   control bar, legend and padding around it; size cells or panels so the part stays inside (only ever shrink).
// Fitting views also get the class `aw-fit` on their root: compact control bars (smaller gaps and controls).

import { listen } from "../shared/dom";
import { type WidgetModel, onModel } from "../shared/model";

export type FitTrait = "auto" | boolean | number[];

export interface Box {
  width: number;
  height: number;
}

/** Room kept free below a fitted view (CSS px): the next cell's edge stays in sight. */
export const FIT_MARGIN = 16;

/** Whether a view with trait value `fit` in theme `themeName` fits ("auto": only in the lecture theme). */
export function fitOn(fit: FitTrait | undefined | null, themeName: string | undefined): boolean {
  if (fit === undefined || fit === null || fit === "auto") return themeName === "lecture";
  if (Array.isArray(fit)) return fit.length === 2;
  return fit === true;
}

/** The fixed box of a `[width, height]` trait value, or null (fit to the screen or not at all). */
export function fixedBox(fit: FitTrait | undefined | null): Box | null {
  return Array.isArray(fit) && fit.length === 2 ? { width: fit[0], height: fit[1] } : null;
}

/** The element that scrolls the notebook around `el` (JupyterLab 4 / Notebook 7 windowed panel, older notebook
 * panels), or null (marimo, VS Code, a saved page: the window scrolls). */
export function scrollerOf(el: Element): HTMLElement | null {
  return el.closest<HTMLElement>(
    ".jp-WindowedPanel-outer, .jp-NotebookPanel-notebook, .jp-Notebook, .jp-NotebookPanel, .jp-OutputArea-scrollable",
  );
}

/** Share of the screen's available height a view fits to inside a cross-origin frame (Colab's outputs), whose own
 * height follows its content: the browser's bars and the notebook's take the rest (720 px screen: 540 px). */
export const FRAME_SHARE = 0.75;

/** The window whose viewport the reader sees around `win`: `win` itself, or, inside an output iframe (VS Code's
 * webview, Colab, an exported page framed), the top window when it can be read (same origin); else null. */
export function topWindow(win: Window): Window | null {
  try {
    const top = win.top;
    if (!top || top === win) return win;
    return top.innerHeight > 0 ? top : null; // reading a cross-origin window's size throws
  } catch {
    return null;
  }
}

/** The height a view may fit to in `win`. An output iframe's own height is the height of what it shows (it grows
 * with its content), so inside one the top window's viewport is used when readable, else {@link FRAME_SHARE} of the
 * screen (not the frame's own height: a frame that starts small and grows with its view would keep it small). */
export function viewportHeight(win: Window): number {
  const top = topWindow(win);
  if (top === win) return win.innerHeight;
  if (top) return top.innerHeight;
  const screenHeight = win.screen?.availHeight || win.screen?.height || 0;
  return screenHeight > 0 ? Math.round(screenHeight * FRAME_SHARE) : win.innerHeight;
}

/** The box a view in `el` may use: the width of `el` (its output area) and the visible height of the notebook (or
 * the window's; inside an output iframe, the viewport around it: {@link viewportHeight}), less {@link FIT_MARGIN}.
 * Null before `el` is laid out (zero width). */
export function screenBox(el: HTMLElement): Box | null {
  const width = el.clientWidth || el.parentElement?.clientWidth || 0;
  if (!(width > 0)) return null;
  const win = typeof window === "undefined" ? 0 : viewportHeight(window);
  const scroller = scrollerOf(el);
  const seen = scroller?.clientHeight ? Math.min(scroller.clientHeight, win || scroller.clientHeight) : win;
  if (!(seen > 0)) return null;
  return { width: Math.floor(width), height: Math.floor(seen - FIT_MARGIN) };
}

/**
 * What a view's flexible part may take so the whole view fits `box`: `box` less the part of the root outside the
 * part (title, bars, legend, padding), given the root's and the part's current sizes. Pure, for tests.
 * `chromeHeight` = rootHeight - partHeight; `padX` = the root's horizontal padding and borders.
 */
export function roomInBox(box: Box, chromeHeight: number, padX: number): Box {
  return {
    width: Math.max(0, Math.floor(box.width - padX)),
    height: Math.max(0, Math.floor(box.height - Math.max(0, chromeHeight))),
  };
}

/** The scale (at most 1: fitting only ever shrinks) that brings `natural` inside `room`, never below `min`. */
export function fitScale(natural: Box, room: Box, min = 0.25): number {
  const s = Math.min(1, room.width / Math.max(1, natural.width), room.height / Math.max(1, natural.height));
  return Math.max(min, s);
}

export interface FitWatcher {
  /** Whether the view fits now (trait and theme). */
  on(): boolean;
  /** The whole box (fixed or measured), or null when not fitting or not laid out yet. */
  box(): Box | null;
  /** What `part` (a child of the root, e.g. the canvas's scroll box) may take, or null when not fitting. */
  room(part: HTMLElement | HTMLElement[]): Box | null;
  cleanup(): void;
}

/**
 * Keep a view fitted: `paint` runs again when the `fit` trait changes or (fitting to the screen) when the output
 * area's width or the notebook's visible height changes. Toggles the root's `aw-fit` class (compact controls) on
 * every call of `on()`. Returns the watcher; push its `cleanup` to the view's cleanups.
 */
export function fitWatcher<T extends { fit?: FitTrait; theme: string }>(
  model: WidgetModel<T>,
  el: HTMLElement,
  root: HTMLElement,
  paint: () => void,
): FitWatcher {
  const trait = () => model.get("fit" as keyof T) as unknown as FitTrait | undefined;
  const on = () => {
    const yes = fitOn(trait(), model.get("theme" as keyof T) as unknown as string);
    root.classList.toggle("aw-fit", yes);
    root.dataset.fit = yes ? "on" : "off";
    return yes;
  };
  const box = (): Box | null => (on() ? (fixedBox(trait()) ?? screenBox(el)) : null);
  // A paint can change what it measured (a title wraps once its panel is narrower): when the root still overflows
  // the box after the frame, paint again (twice at most per box).
  let settling = false;
  let settles = 0;
  const settle = (b: Box) => {
    if (settling || settles >= 2) return;
    settling = true;
    requestAnimationFrame(() => {
      settling = false;
      const r = root.getBoundingClientRect();
      if (r.height > b.height + 0.5 || r.width > b.width + 0.5) {
        settles++;
        paint();
      }
    });
  };
  const room = (part: HTMLElement | HTMLElement[]): Box | null => {
    const b = box();
    if (!b) return null;
    if (typeof requestAnimationFrame !== "undefined") settle(b);
    const parts = Array.isArray(part) ? part : [part];
    const r = root.getBoundingClientRect();
    const used = parts.reduce((s, p) => s + p.getBoundingClientRect().height, 0);
    const cs = getComputedStyle(root);
    const padX =
      Number.parseFloat(cs.paddingLeft) +
      Number.parseFloat(cs.paddingRight) +
      Number.parseFloat(cs.borderLeftWidth) +
      Number.parseFloat(cs.borderRightWidth);
    const fitted = roomInBox(b, r.height - used, padX || 0);
    root.dataset.fitBox = `${b.width}x${b.height}`;
    return fitted;
  };
  const cleanups: Array<() => void> = [
    onModel(model, "change:fit" as never, () => {
      settles = 0;
      paint();
    }),
  ];
  let last = "";
  let frame = 0;
  const check = () => {
    if (!on() || fixedBox(trait())) return;
    const b = screenBox(el);
    const key = b ? `${b.width}x${b.height}` : "";
    if (key === last) return;
    last = key;
    settles = 0;
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => paint());
  };
  if (typeof ResizeObserver !== "undefined") {
    const observer = new ResizeObserver(check);
    observer.observe(el);
    // The scroller is found once attached; JupyterLab attaches the output after render() returns.
    let watched: HTMLElement | null = null;
    const watchScroller = () => {
      const s = scrollerOf(el);
      if (s && s !== watched) {
        watched = s;
        observer.observe(s);
      }
      check();
    };
    const t = setTimeout(watchScroller, 0);
    const t2 = setTimeout(watchScroller, 500);
    cleanups.push(() => {
      clearTimeout(t);
      clearTimeout(t2);
      cancelAnimationFrame(frame);
      observer.disconnect();
    });
  }
  if (typeof window !== "undefined") {
    cleanups.push(listen(window, "resize", check));
    const top = topWindow(window);
    if (top && top !== window) cleanups.push(listen(top, "resize", check)); // an output iframe: the reader's window
  }
  return {
    on,
    box,
    room,
    cleanup() {
      for (const c of cleanups.splice(0)) c();
    },
  };
}
