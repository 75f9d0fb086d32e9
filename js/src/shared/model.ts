// The part of anywidget's model API the widgets use, typed once. A static export (save_html) supplies an object
// with the same shape, so every widget renders with or without a kernel.

export interface WidgetModel<T> {
  get<K extends keyof T>(key: K): T[K];
  set<K extends keyof T>(key: K, value: T[K]): void;
  save_changes(): void;
  on(event: string, cb: (...args: never[]) => void): void;
  off(event?: string | null, cb?: ((...args: never[]) => void) | null): void;
  send(content: unknown, callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]): void;
}

export interface RenderProps<T> {
  model: WidgetModel<T>;
  el: HTMLElement;
}

/** Subscribe to model events; returns the unsubscribe function. */
export function onModel<T>(model: WidgetModel<T>, event: string, cb: (...args: never[]) => void): () => void {
  model.on(event, cb);
  return () => model.off(event, cb);
}

/** Set several traits, then sync them to Python in one message. */
export function saveTraits<T>(model: WidgetModel<T>, changes: Partial<T>): void {
  for (const [k, v] of Object.entries(changes)) model.set(k as keyof T, v as T[keyof T]);
  model.save_changes();
}

/** The tooltip and label of a control that needs the model (a re-run, a new text) in a view drawn without a kernel. */
export const NEEDS_KERNEL = "needs a running kernel";

/**
 * Whether `model` has no kernel behind it: a saved page's or a saved notebook output's StaticModel says so with
 * `kernel: false`. Views then show what only Python can compute (an ablation re-run, a new sentence) disabled.
 */
export function isStatic<T>(model: WidgetModel<T>): boolean {
  return (model as { kernel?: unknown }).kernel === false;
}

/** In a view without a kernel, disable `controls` and say why in their tooltip; with one, leave them alone. */
export function needsKernel<T>(
  model: WidgetModel<T>,
  ...controls: Array<HTMLElement | null | undefined>
): void {
  if (!isStatic(model)) return;
  for (const c of controls) {
    if (!c) continue;
    if ("disabled" in c) (c as HTMLInputElement).disabled = true;
    c.setAttribute("aria-disabled", "true");
    c.title = NEEDS_KERNEL;
  }
}
