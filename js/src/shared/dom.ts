// Building DOM without markup: every piece of text goes through textContent, so token text can never run. And which
// keys belong to a focused menu or box rather than to the widget (typedInControl, ownKey).

export type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "className") node.className = String(value);
    else if (key.startsWith("on")) throw new Error("attach listeners with addEventListener, not attributes");
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** A <select> whose options are set as text. */
export function select(options: Array<[string, string]>, value: string, label: string): HTMLSelectElement {
  const s = h("select", { "aria-label": label });
  for (const [v, text] of options) {
    const o = h("option", { value: v, text });
    s.append(o);
  }
  s.value = value;
  return s;
}

/** A menu (`select`, test id `testid`) whose change calls `pick` with the value chosen; its listener goes to
 * `controls` (a control group, rebuilt with the bar). */
export function menu(
  controls: Array<() => void>,
  options: Array<[string, string]>,
  value: string,
  label: string,
  testid: string,
  pick: (value: string) => void,
): HTMLSelectElement {
  const sel = select(options, value, label);
  sel.dataset.testid = testid;
  controls.push(listen(sel, "change", () => pick(sel.value)));
  return sel;
}

/** Listen, and get back a function that stops listening (for render()'s cleanup). */
export function listen<K extends keyof HTMLElementEventMap>(
  target: HTMLElement | Window | Document,
  type: K,
  fn: (e: HTMLElementEventMap[K]) => void,
  options?: AddEventListenerOptions,
): () => void {
  target.addEventListener(type, fn as EventListener, options);
  return () => target.removeEventListener(type, fn as EventListener, options);
}

/** Listeners of controls that are built again and again (a bar redrawn on a trait change). Removed with the old
 * controls by `resetControls`, and at teardown through the entry this adds to `cleanups`. */
export function controlGroup(cleanups: Array<() => void>): Array<() => void> {
  const group: Array<() => void> = [];
  cleanups.push(() => {
    for (const c of group.splice(0)) c();
  });
  return group;
}

/** Remove the listeners of `group` and empty `containers`, before their controls are built again. The control that
 * had the keyboard focus gets it back once the new controls are in (found by its aria-label), so a menu that changed
 * the view still takes the next arrow key. */
export function resetControls(group: Array<() => void>, ...containers: HTMLElement[]): void {
  for (const c of group.splice(0)) c();
  const active = typeof document === "undefined" ? null : document.activeElement;
  const label =
    active && containers.some((el) => el.contains(active)) ? active.getAttribute("aria-label") : null;
  for (const el of containers) el.replaceChildren();
  if (!label) return;
  queueMicrotask(() => {
    for (const el of containers)
      for (const c of el.querySelectorAll<HTMLElement>("[aria-label]"))
        if (c.getAttribute("aria-label") === label) return c.focus();
  });
}

/** True when a key was typed in a menu or an input box, where it belongs to that control, not to the widget. */
export function typedInControl(e: KeyboardEvent): boolean {
  return e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement;
}

/** A key a focused menu or box acts on itself: anything without Ctrl, Alt or Meta but Tab, Escape and Shift+Enter
 * (which move focus, leave or run the cell as usual). */
export function ownKey(e: {
  key: string;
  ctrlKey: boolean;
  altKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
}): boolean {
  if (e.ctrlKey || e.altKey || e.metaKey) return false;
  return !(e.key === "Tab" || e.key === "Escape" || (e.key === "Enter" && e.shiftKey));
}
