// Fetching data that is not on screen yet from Python, by custom message, with a page-side cache.
// Python answers {type: "reply", id, ...} plus binary buffers (attnwidgets/widgets/_base.py: AttnWidget._on_msg).

import { type WidgetModel, onModel } from "./model";

export interface Reply {
  content: Record<string, unknown>;
  buffers: Array<DataView | ArrayBuffer>;
}

export class Requester<T> {
  private next = 1;
  private pending = new Map<number, (r: Reply) => void>();
  private failures = new Map<number, (e: Error) => void>();
  private cache = new Map<string, Promise<Reply>>();
  private stop: () => void;

  constructor(private model: WidgetModel<T>) {
    this.stop = onModel(
      model,
      "msg:custom",
      (msg: Record<string, unknown>, buffers?: Array<DataView | ArrayBuffer>) => {
        if (!msg || msg.type !== "reply") return;
        const id = Number(msg.id);
        const ok = this.pending.get(id);
        const fail = this.failures.get(id);
        this.pending.delete(id);
        this.failures.delete(id);
        if (msg.error && fail) fail(new Error(String(msg.error)));
        else if (ok) ok({ content: msg, buffers: buffers ?? [] });
      },
    );
  }

  /** Ask once per key; later calls with the same key share the answer. */
  get(key: string, request: Record<string, unknown>): Promise<Reply> {
    const hit = this.cache.get(key);
    if (hit) return hit;
    const id = this.next++;
    const p = new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, resolve);
      this.failures.set(id, reject);
      this.model.send({ ...request, type: "request", id });
    });
    p.catch(() => this.cache.delete(key));
    this.cache.set(key, p);
    return p;
  }

  /** Ask without caching (each call is a new request: commands such as re-running an ablation). */
  ask(request: Record<string, unknown>): Promise<Reply> {
    const id = this.next++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, resolve);
      this.failures.set(id, reject);
      this.model.send({ ...request, type: "request", id });
    });
  }

  has(key: string): boolean {
    return this.cache.has(key);
  }

  clear(): void {
    this.cache.clear();
  }

  dispose(): void {
    this.stop();
    this.pending.clear();
    this.failures.clear();
  }
}
