// A WidgetModel without a kernel, for saved pages (js/src/page.ts, attnwidgets/export.py) and saved notebook outputs
// (js/src/shared/saved_view.ts, attnwidgets/view_mime.py). State lives in the page;
// requests are answered from replies precomputed in Python, keyed by requestKey(). A request that was not saved is
// answered with an error the widget shows, so a view that cannot be drawn says why instead of staying blank.

import type { WidgetModel } from "./model";

export interface SavedReply {
  content: Record<string, unknown>;
  buffers: string[]; // base64
}

export interface PageData {
  esm: string;
  state: Record<string, unknown>;
  widget: string;
  scope: string;
}

type Callback = (...args: never[]) => void;

export function fromBase64(b64: string): DataView {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new DataView(bytes.buffer);
}

/** Turn every {"$b64": ...} in saved state back into bytes (a DataView, as ipywidgets gives them). */
export function decodeState(value: unknown): Record<string, unknown> {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") {
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o);
      if (keys.length === 1 && keys[0] === "$b64" && typeof o.$b64 === "string") return fromBase64(o.$b64);
      const out: Record<string, unknown> = {};
      for (const k of keys) out[k] = walk(o[k]);
      return out;
    }
    return v;
  };
  return walk(value) as Record<string, unknown>;
}

/** The same string attnwidgets/export.py: request_key() makes: fields but type and id, sorted, compact JSON. */
export function requestKey(request: Record<string, unknown>): string {
  const fields: Record<string, unknown> = {};
  for (const k of Object.keys(request).sort()) if (k !== "type" && k !== "id") fields[k] = request[k];
  return JSON.stringify(fields);
}

export class StaticModel implements WidgetModel<Record<string, unknown>> {
  /** No kernel behind this model: views disable what only Python can do (model.ts isStatic, needsKernel). */
  readonly kernel = false;

  private listeners = new Map<string, Set<Callback>>();

  private saved: Record<string, SavedReply> | null = null;

  /** `replies` is called once, on the first request (parsing many saved views is left until they are needed). */
  constructor(
    private state: Record<string, unknown>,
    private replies: () => Record<string, SavedReply>,
    private scope = "all",
  ) {}

  get<K extends string>(key: K): never {
    return this.state[key] as never;
  }

  set<K extends string>(key: K, value: unknown): void {
    const old = this.state[key];
    this.state[key] = value;
    if (old !== value) this.emit(`change:${key}`, this, value);
  }

  save_changes(): void {}

  on(event: string, cb: Callback): void {
    for (const name of event.split(" ")) {
      if (!this.listeners.has(name)) this.listeners.set(name, new Set());
      this.listeners.get(name)?.add(cb);
    }
  }

  off(event?: string | null, cb?: Callback | null): void {
    if (!event) {
      this.listeners.clear();
      return;
    }
    for (const name of event.split(" ")) {
      if (cb) this.listeners.get(name)?.delete(cb);
      else this.listeners.delete(name);
    }
  }

  send(content: unknown): void {
    const msg = (content ?? {}) as Record<string, unknown>;
    if (msg.type !== "request") return;
    // The saved replies follow the host script in the page: wait until the page has been read to its end.
    if (typeof document !== "undefined" && document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", () => this.send(content), { once: true });
      return;
    }
    if (this.saved === null) this.saved = this.replies();
    const saved = this.saved[requestKey(msg)];
    const reply = saved
      ? { ...saved.content, type: "reply", id: msg.id }
      : {
          type: "reply",
          id: msg.id,
          error:
            this.scope === "view"
              ? "This view was not saved in this page (it was saved with scope='view': only the first view). " +
                "Save it again with scope='all' to switch views offline."
              : "This view was not saved in this page. Save it again from Python with this view selected.",
        };
    const buffers = saved ? saved.buffers.map(fromBase64) : [];
    // Asynchronous like a kernel reply, so the widget's own bookkeeping runs first.
    setTimeout(() => this.emit("msg:custom", reply, buffers), 0);
  }

  private emit(event: string, ...args: unknown[]): void {
    for (const cb of Array.from(this.listeners.get(event) ?? [])) (cb as (...a: unknown[]) => void)(...args);
  }
}
