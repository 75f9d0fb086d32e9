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
